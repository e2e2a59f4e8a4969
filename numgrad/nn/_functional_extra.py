"""More of ``numgrad.nn.functional``: conv1d, transposed convolutions, group and instance
norm, the reflect/replicate/circular paddings and ``interpolate`` (nearest, linear, bilinear).

Everything runs existing kernels: conv1d is the conv2d machinery on a unit height,
transposed convolutions are one GEMM per group followed by ``col2im`` (the adjoint of
conv2d), group norm is the layer-norm kernel over (batch x group) rows, and paddings and
resampling are gathers along one dim at a time (linear modes blend two gathers), whose
adjoints are scatter-adds. ``numgrad/nn/functional.py`` re-exports the public names.
"""

import math

import numpy as np

from numgrad._shape import Size
from numgrad.nn import _checks as C
from numgrad.nn import _pad_checks
from numgrad.nn import functional as F
from numgrad.ops import conv as CV
from numgrad.ops import conv_transpose as CT
from numgrad.ops import group_norm as GN
from numgrad.ops import resample as R
from numgrad.ops import shape as sh
from numgrad.ops._util import (
    Tensor,
    dtype_of,
)

__all__ = ["conv1d", "conv_transpose1d", "conv_transpose2d", "group_norm", "instance_norm",
           "pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_pad_constant = F.pad  # functional.pad before this module replaces it (constant mode)


# ========================================================================================
# convolution checks (PyTorch's _convolution and check_shape_forward, any spatial rank)
# ========================================================================================


def _check_conv(x_shape, w_shape, stride, padding, dilation, groups, bias_shape,
                transposed=False, output_padding=(0,)):
    """PyTorch's checks of a convolution, in its order; returns the expanded parameters."""
    wnd = len(w_shape)
    if wnd < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = wnd - 2
    stride = F._expand_param(tuple(stride), "stride", dim)
    padding = F._expand_param(tuple(padding), "padding", dim)
    dilation = F._expand_param(tuple(dilation), "dilation", dim)
    output_padding = F._expand_param(tuple(output_padding), "output_padding", dim)
    if min(padding) < 0:
        raise RuntimeError("negative padding is not supported")
    if min(output_padding) < 0:
        raise RuntimeError("negative output_padding is not supported")
    if min(stride) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) <= 0:
        raise RuntimeError("non-positive dilation is not supported")
    if wnd != len(x_shape):
        raise RuntimeError(f"Expected {wnd}-dimensional input for {wnd}-dimensional weight "
                           f"{list(w_shape)}, but got {len(x_shape)}-dimensional input of size "
                           f"{list(x_shape)} instead")
    w0 = w_shape[0]
    if w0 < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(w_shape)} instead")
    if w0 % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{list(w_shape)}] instead")
    if transposed:
        if x_shape[1] != w0:
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(w_shape)}, expected input"
                f"{list(x_shape)} to have {w0} channels, but got {x_shape[1]} channels instead")
        oc = w_shape[1] * groups
        if bias_shape is not None and tuple(bias_shape) != (oc,):
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(w_shape)}, expected bias to be "
                f"1-dimensional with {oc} elements, but got bias of size {list(bias_shape)} "
                "instead")
        for op, s, d in zip(output_padding, stride, dilation):
            if op >= s and op >= d:
                names = ("depth", "height", "width")[3 - dim:]
                parts = [f"output_padding_{n}: {v}" for n, v in zip(names, output_padding)]
                parts += [f"stride_{n}: {v}" for n, v in zip(names, stride)]
                parts += [f"dilation_{n}: {v}" for n, v in zip(names, dilation)]
                raise RuntimeError("output padding must be smaller than either stride or "
                                   f"dilation, but got {' '.join(parts)}")
        out = tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, k, s, p, d, op in zip(
            x_shape[2:], w_shape[2:], stride, padding, dilation, output_padding))
        return stride, padding, dilation, output_padding, out
    if x_shape[1] != w_shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(w_shape)}, expected input"
            f"{list(x_shape)} to have {w_shape[1] * groups} channels, but got {x_shape[1]} "
            "channels instead")
    if bias_shape is not None and tuple(bias_shape) != (w0,):
        raise RuntimeError(f"Given weight of size {list(w_shape)}, expected bias to be "
                           f"1-dimensional with {w0} elements, but got bias of size "
                           f"{list(bias_shape)} instead")
    padded = [n + 2 * p for n, p in zip(x_shape[2:], padding)]
    eff = [d * (k - 1) + 1 for k, d in zip(w_shape[2:], dilation)]
    if any(a < b for a, b in zip(padded, eff)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
            "actual input size")
    out = tuple(CV.blocks(n, k, s, p, d) for n, k, s, p, d in zip(
        x_shape[2:], w_shape[2:], stride, padding, dilation))
    return stride, padding, dilation, output_padding, out


def _check_types(input, weight, bias):
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.dtype != input._data.dtype:
            raise RuntimeError(
                f"Input type ({C.type_name(input)}) and {name} type ({C.type_name(t)}) should be "
                f"the same or input should be a MKLDNN tensor and {name} is a dense tensor")
    F._require_float(input, "slow_conv2d_cpu")


# ========================================================================================
# conv1d: the conv2d kernels on a unit height
# ========================================================================================


_CONV1D_SIGNATURES = (
    "\n * (Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, tuple of "
    "ints padding = 0, tuple of ints dilation = 1, int groups = 1)\n * (Tensor input, Tensor "
    "weight, Tensor bias = None, tuple of ints stride = 1, str padding = \"valid\", tuple of ints "
    "dilation = 1, int groups = 1)\n")


def _conv1d_args(input, weight, bias, stride, padding, dilation, groups):
    try:
        if not (isinstance(input, Tensor) and isinstance(weight, Tensor)
                and (bias is None or isinstance(bias, Tensor))):
            raise TypeError
        stride = C.int_list(stride, "conv1d", "stride", 4)
        dilation = C.int_list(dilation, "conv1d", "dilation", 6)
        if not isinstance(padding, str):
            padding = C.int_list(padding, "conv1d", "padding", 5)
        groups = C.int_arg(groups, "conv1d", "groups", 7)
    except TypeError:
        got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__
                        for a in (input, weight, bias, stride, padding, dilation, groups))
        raise TypeError(f"conv1d() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:{_CONV1D_SIGNATURES}") from None
    return stride, padding, dilation, groups


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) or unbatched (C, L) input (``ConvolutionBackward0``):
    the conv2d kernels (im2col + one GEMM per group) on a unit height."""
    stride, padding, dilation, groups = _conv1d_args(input, weight, bias, stride, padding,
                                                     dilation, groups)
    nd = input._data.ndim
    if nd not in (2, 3):
        raise RuntimeError("Expected 2D (unbatched) or 3D (batched) input to conv1d, but got "
                           f"input of size: {list(input._data.shape)}")
    unbatched = nd == 2
    if unbatched:
        input = sh.unsqueeze(input, 0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,)
        elif padding == "same":
            input, padding = _same_1d(input, weight, stride, dilation, groups)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    stride, padding, dilation, _, (ol,) = _check_conv(
        input._data.shape, weight._data.shape, stride, padding, dilation, groups,
        bias._data.shape if bias is not None else None)
    _check_types(input, weight, bias)
    x4 = input._data[:, :, None, :]
    w4 = weight._data[:, :, None, :]
    if F._check_empty_input(x4.shape) and w4.shape[3] <= 0:  # checked as a 2-D convolution
        raise RuntimeError("kernel size should be greater than zero, but got kernel_height: 1 "
                           f"kernel_width: {w4.shape[3]}")
    geo = CV.make_geom(x4.shape, w4.shape, (1, w4.shape[3]), (1, stride[0]), (0, padding[0]),
                       (1, dilation[0]), groups, (1, ol))
    res = CV.convolution(input, weight, bias, geo, True,
                         F._empty_conv_shape(input, weight, (ol,)))
    return sh.squeeze(res, 0) if unbatched else res


def _same_1d(input, weight, stride, dilation, groups):
    """padding='same' for conv1d: PyTorch's checks, the odd part of an even kernel's padding
    added on the right; returns the input and the symmetric padding."""
    w_shape = weight._data.shape
    if len(w_shape) < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = len(w_shape) - 2
    for name, v in (("stride", stride), ("dilation", dilation)):
        if len(v) not in (1, dim):
            raise RuntimeError(f"{name} cannot broadcast to {dim} dimensions")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    total = dilation[0] * (w_shape[-1] - 1)
    left = F._ctrunc(total, 2)
    if total - 2 * left:
        input = _pad_constant(input, [0, total - 2 * left])
    return input, (left,)


# ========================================================================================
# transposed convolutions: columns W^T x, summed into the image by col2im
# ========================================================================================


def _check_transposed_sizes(x_shape, w_shape, out):
    """PyTorch's checks of a transposed convolution after its argument checks, on the 4-D
    shapes (1-D ones carry a unit height): an empty input must have an empty batch, whose
    output size must not be negative; a kernel runs only on a nonempty kernel and weight and
    a positive output size."""
    if not F._check_empty_input(x_shape):
        shape = (x_shape[0], w_shape[1]) + tuple(out)
        for i, v in enumerate(shape):
            if v < 0:
                raise RuntimeError(f"invalid shape dimension {v} at index {i} of shape "
                                   f"{list(shape)}")
        return
    if min(w_shape[2:]) <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kernel_height: "
                           f"{w_shape[2]} kernel_width: {w_shape[3]}")
    if 0 in w_shape:
        raise RuntimeError(f"non-empty 2D or 4D weight tensor expected, but got: {list(w_shape)}")
    if min(out) < 1:
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, x_shape[2:]))}). "
            f"Calculated output size per channel: ({' x '.join(map(str, out))}). "
            "Output size is too small")


def _conv_transpose(fn, dims, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    C.conv_tensors(fn, input, weight, bias)
    if isinstance(padding, str):
        raise TypeError(f"{fn}(): argument 'padding' must be tuple of ints, not str")
    # the argument parser repeats a single int over the op's own dims
    stride, padding, output_padding, dilation = (
        C.int_tuple(fn, name, pos, v, dims)
        for name, pos, v in (("stride", 4, stride), ("padding", 5, padding),
                             ("output_padding", 6, output_padding), ("dilation", 8, dilation)))
    groups = C.int_arg(groups, fn, "groups", 7)
    nd = input._data.ndim
    if dims == 2 and nd not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to {fn}, but got "
                           f"input of size: {list(input._data.shape)}")
    unbatched = nd == dims + 1
    if unbatched:
        input = sh.unsqueeze(input, 0)
    stride, padding, dilation, output_padding, out = _check_conv(
        input._data.shape, weight._data.shape, stride, padding, dilation, groups,
        bias._data.shape if bias is not None else None, True, output_padding)
    _check_types(input, weight, bias)
    unit = dims == 1
    x, w = input._data, weight._data
    if unit:
        x, w = x[:, :, None, :], w[:, :, None, :]
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
        out = (1,) + out
    _check_transposed_sizes(x.shape, w.shape, out)
    n, oc = x.shape[0], w.shape[1] * groups
    geo = CV.make_geom((n, oc) + out, w.shape, w.shape[2:], stride, padding, dilation, groups,
                       x.shape[2:])
    if x.size == 0 or w.size == 0:  # the bias alone (the empty case of the convolution op)
        res = CV.convolution(input, weight, bias, geo, unit, (n, oc) + out[unit:])
        return sh.squeeze(res, 0) if unbatched else res
    res = CT._conv_transpose(input, weight, bias, geo, unit, (n, oc) + out)
    return sh.squeeze(res, 0) if unbatched else res


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution ("deconvolution") of (N, Cin, H, W) or unbatched input with
    weight (Cin, Cout/groups, kh, kw) (``ConvolutionBackward0``)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution of (N, Cin, L) or unbatched (Cin, L) input
    (``ConvolutionBackward0``)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# ========================================================================================
# group norm and instance norm
# ========================================================================================


def _nonzero(num_groups):
    if num_groups == 0:  # PyTorch's group_norm divides by it in Python first
        raise ZeroDivisionError("integer division or modulo by zero")
    return num_groups


def _verify_group_size(size):
    """F.group_norm's check of its (N * C / G, G, *spatial) view: one value per group
    cannot be normalized."""
    count = size[0]
    for s in size[2:]:
        count *= s
    if count == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalize each group of channels of each sample over the group's channels and space,
    then scale and shift per channel (``NativeGroupNormBackward0``)."""
    C.tensor_arg("group_norm", "input", 1, input)
    num_groups = C.int_arg(num_groups, "group_norm", "num_groups", 2)
    eps = C.float_arg(eps, "group_norm", "eps", 5)
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{x.ndim}")
    n, c = x.shape[:2]
    _verify_group_size([n * c // _nonzero(num_groups), num_groups] + list(x.shape[2:]))
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(x.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.size != c):
            # PyTorch's bias message shows the weight's shape ([0] without a weight)
            shown = t if name == "weight" else weight
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape "
                f"{list(shown._data.shape) if shown is not None else [0]} and input of shape "
                f"{list(x.shape)}")
    F._require_float(input, "GroupNormKernelImpl")
    F._check_mixed_dtype(input, (weight, bias))
    if x.size == 0:
        return sh.clone(input)
    return GN.native_group_norm(input, weight, bias, num_groups, float(eps))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Normalize each channel of each sample over its space: batch norm of the (1, N*C, ...)
    view, as PyTorch computes it (``ViewBackward0`` over ``NativeBatchNormBackward0``;
    ``numgrad.ops.group_norm.instance_norm``); running statistics get the batch mean of the
    per-sample updates."""
    C.tensor_arg("instance_norm", "input", 1, input)
    x = input._data
    if use_input_stats:
        if x.ndim < 2 or math.prod(x.shape[2:]) == 1:
            raise ValueError("Expected more than 1 spatial element when training, got input "
                             f"size {Size(x.shape)}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    return GN.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                            momentum, eps, F.batch_norm)


# ========================================================================================
# padding
# ========================================================================================


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad)/2 dims: ``'constant'`` (``ConstantPadNdBackward0``), ``'reflect'``
    (``ReflectionPad{1,2,3}DBackward0``), ``'replicate'`` (``ReplicationPad{1,2,3}DBackward0``)
    or ``'circular'``; negative widths crop. Every size is checked (``_pad_checks``) before a
    kernel runs."""
    if mode not in ("reflect", "replicate", "circular"):
        return _pad_constant(input, pad, mode, value)
    C.tensor_arg("pad", "input", 1, input)
    if not isinstance(pad, (list, tuple)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{type(pad).__name__}")
    widths = C.int_list(pad, "pad", "pad", 2)
    _pad_checks.check_widths(widths)
    if value is not None:
        C.float_arg(value, "pad", "value", 4)
    if len(widths) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd = input._data.ndim
    if len(widths) // 2 > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(widths)} and input of "
                           f"dimension {nd}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    shape = input._data.shape
    out_shape = _pad_checks.mode_shape(mode, shape, widths)
    if mode != "circular" and input._data.dtype == np.bool_:
        raise C.not_implemented(_pad_checks.kernel_name(mode, widths), input)
    return R.pad(input, widths, mode, out_shape)


# ========================================================================================
# interpolate
# ========================================================================================


_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else None


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, L) or (N, C, H, W) input: ``'nearest'`` (``UpsampleNearest{1,2}D
    Backward0``), ``'nearest-exact'`` (``UpsampleNearestExact{1,2}DBackward0``), ``'area'``
    (adaptive average pooling, as PyTorch), ``'linear'`` (3-D), ``'bilinear'`` and
    ``'bicubic'`` (4-D, ``UpsampleBicubic2DBackward0``), with or without ``align_corners``; by
    ``size`` or ``scale_factor``; ``antialias=True`` with ``'bilinear'`` or ``'bicubic'``
    (``Upsample{Bilinear,Bicubic}2DAaBackward0``, PIL's widened filters). Not yet: 5-D input,
    ``'lanczos'``."""
    C.tensor_arg("interpolate", "input", 1, input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    shape = input._data.shape
    dim = len(shape) - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if _as_list(size) is not None:
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(shape[2:])} and output size of "
                    f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            output_size = list(size)
        else:
            output_size = [size] * dim
        scales = None
    elif scale_factor is not None:
        if _as_list(scale_factor) is not None:
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(shape[2:])} and scale_factor of "
                    f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                    "format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        output_size = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor and scales is not None:
        output_size = [math.floor(float(shape[i + 2]) * scales[i]) for i in range(dim)]
        scales = None
    if antialias:
        if not (mode in ("bilinear", "bicubic", "lanczos") and dim == 2):
            raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                             "modes and requires a 4-D tensor as input")
    if mode == "lanczos" and dim == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
        raise NotImplementedError("interpolate mode 'lanczos' is not supported by numgrad")
    if mode == "area":  # PyTorch's area mode is adaptive average pooling to the output size
        if output_size is None:
            output_size = [math.floor(float(shape[i + 2]) * scales[i]) for i in range(dim)]
        if dim == 1:
            return F.adaptive_avg_pool1d(input, output_size)
        if dim == 2:
            return F.adaptive_avg_pool2d(input, output_size)
    key = (mode + "-aa" if antialias else mode, dim)
    if key not in R.UPSAMPLE:
        if mode == "bilinear" and dim == 1:
            raise NotImplementedError("Got 3D input, but bilinear mode needs 4D input")
        if mode == "linear" and dim == 2:
            raise NotImplementedError("Got 4D input, but linear mode needs 3D input")
        known = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area",
                 "nearest-exact")
        if mode not in known or dim not in (1, 2, 3) or (mode == "bicubic" and dim != 2):
            raise NotImplementedError(
                f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {dim + 2}D) for "
                f"the modes: {_MODES} (got {mode})")
        raise NotImplementedError(f"interpolate mode '{mode}' on {dim + 2}-D input is not "
                                  "supported by numgrad")
    if output_size is None:
        output_size = [math.floor(float(shape[i + 2]) * scales[i]) for i in range(dim)]
    output_size = [C.int_arg(v, "interpolate", "size", 2) for v in output_size]
    names = ("H", "W") if dim == 2 else ("W",)
    if min(shape[2:]) <= 0 or min(output_size) <= 0:
        ins = ", ".join(f"{a}: {b}" for a, b in zip(names, shape[2:]))
        outs = ", ".join(f"{a}: {b}" for a, b in zip(names, output_size))
        raise RuntimeError("Input and output sizes should be greater than 0, but got input "
                           f"({ins}){' and' if dim == 1 else ''} output ({outs})")
    if 0 in shape[1:]:  # only the batch may be empty
        raise RuntimeError(f"Non-empty {dim + 2}D data tensor expected but got a tensor with "
                           f"sizes {list(shape)}")
    if antialias and input._data.dtype not in (np.float32, np.float64):
        if input._data.dtype == np.uint8:
            raise NotImplementedError("interpolate with antialias=True on uint8 input is not "
                                      "supported by numgrad")
        raise C.not_implemented("compute_index_ranges_weights", input)
    if not dtype_of(input).is_floating_point:
        if mode == "bicubic":
            raise C.not_implemented("compute_indices_weights_cubic", input)
        kernel = {"nearest": f"upsample_nearest{dim}d", "linear": "upsample_linear1d",
                  "bilinear": "upsample_bilinear2d",
                  "nearest-exact": ("compute_indices_weights_nearest" if dim == 1
                                    else "upsample_nearest2d")}[mode]
        raise C.not_implemented(kernel + ("_channels_last" if dim == 2 else ""), input)
    return R.upsample(input, mode, antialias, output_size, scales, align_corners)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate`` (PyTorch warns)."""
    import warnings
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
