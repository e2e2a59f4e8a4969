"""More of ``numgrad.nn.functional``: group and instance norm, ``pad`` (every mode) and
``interpolate``, with PyTorch's checks. The math is the ops of ``numgrad.ops``: group norm
is the layer-norm kernel over (batch x group) rows, paddings and resampling are gathers along
one dim at a time (linear modes blend two gathers), whose adjoints are scatter-adds.
``numgrad/nn/functional.py`` re-exports the public names."""

import math

import numpy as np

from numgrad._shape import Size
from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.ops import group_norm as GN
from numgrad.ops import pad as PAD
from numgrad.ops import resample as R
from numgrad.ops import shape as sh
from numgrad.ops._util import (
    dtype_of,
)

__all__ = ["group_norm", "instance_norm", "pad", "interpolate", "upsample", "upsample_nearest",
           "upsample_bilinear"]

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
    C.norm_dtypes(input, "GroupNormKernelImpl", (weight, bias))
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


# PyTorch's padding size checks, in its order and with its messages. Sizes are computed as
# PyTorch computes them, in int64 (a width of 2**62 wraps the output size negative there, and
# so it does here); every padded dim of a reflect/replicate input must be non-empty, reflect
# widths must be smaller than the dim, circular ones at most the dim.

_UNSUPPORTED = ("Padding size {n} is not supported for {nd}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
_KERNEL = {"reflect": "reflection_pad", "replicate": "replication_pad"}


def _i64(v):
    """``v`` wrapped to int64, as C++ arithmetic on sizes wraps."""
    return ((v + (1 << 63)) % (1 << 64)) - (1 << 63)


def _check_widths(widths):
    """The argument parser's limits on an ``int[]``: every width fits in int64."""
    for i, w in enumerate(widths):
        if not -(1 << 63) <= w < (1 << 63):
            raise TypeError(f"pad(): argument 'pad' failed to unpack the object at pos {i + 1} "
                            "with error \"Overflow when unpacking long long\"")
        if w == -(1 << 63):  # PyTorch's symbolic-int sentinel
            raise RuntimeError("SymIntArrayRef expected to contain only concrete integers")


def _representable(out):
    """NumPy holds no dim of more than 2**63 bytes, even in an empty array (PyTorch does)."""
    if max(out, default=0) > (1 << 59):
        raise RuntimeError(f"numgrad cannot hold a tensor of shape {out}: a dimension over "
                           "2**59 elements (an empty one included) is beyond NumPy's limit")
    return out


def _dims(shape, widths):
    """(dim, size, lo, hi) of each padded dim, outermost first."""
    nd, k = len(shape), len(widths) // 2
    return [(d, shape[d], widths[2 * (nd - 1 - d)], widths[2 * (nd - 1 - d) + 1])
            for d in range(nd - k, nd)]


def _constant_shape(shape, widths):
    """The output shape of constant padding: negative widths narrow first (outer dims first)."""
    dims = _dims(shape, widths)
    for _, size, lo, hi in dims:
        for w in (lo, hi):
            if w < 0:
                size += w
                if size < 0:
                    raise RuntimeError("narrow(): length must be non-negative.")
    out = list(shape)
    if all(lo <= 0 and hi <= 0 for _, _, lo, hi in dims):
        for d, size, lo, hi in dims:
            out[d] = size + lo + hi
        return out
    for d, size, lo, hi in dims:
        out[d] = _i64(size + lo + hi)
        if out[d] < 0:
            raise RuntimeError(f"The input size {size}, plus negative padding {lo} and {hi} "
                               f"resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
    return _representable(out)


def _circular_shape(shape, widths):
    out = list(shape)
    for d, size, lo, hi in _dims(shape, widths):
        out[d] = _i64(size + lo + hi)
        if lo > size or hi > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out[d] < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    return _representable(out)


def _too_small(mode, k, sizes, outs):
    if k == 1:
        return f"input (W: {sizes[0]}) is too small. Calculated output W: {outs[0]}"
    if k == 2:
        gap = " " if mode == "replicate" else ""
        return (f"input (H: {sizes[0]}, W: {sizes[1]}{gap}) is too small. Calculated output H: "
                f"{outs[0]} W: {outs[1]}")
    return (f"input (D: {sizes[0]} H: {sizes[1]}, W: {sizes[2]}) is too small. Calculated "
            f"output D: {outs[0]} H: {outs[1]} W: {outs[2]}")


def _mode_shape(mode, shape, widths):
    """The output shape of reflect/replicate/circular padding, or PyTorch's error."""
    nd, k = len(shape), len(widths) // 2
    if not (1 <= k <= 3 and nd in (k + 1, k + 2)):
        raise NotImplementedError(_UNSUPPORTED.format(n=len(widths), nd=nd))
    if mode == "circular":
        return _circular_shape(shape, widths)
    first = 1 if nd == k + 2 else 0  # a batch dim may be empty, no other
    if any(shape[d] == 0 for d in range(first, nd)):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"{list(shape)}")
    dims = _dims(shape, widths)
    if mode == "reflect":
        for j, (d, size, lo, hi) in enumerate(reversed(dims)):
            if lo >= size or hi >= size:
                raise RuntimeError(
                    f"Argument #{4 + 2 * j}: Padding size should be less than the corresponding "
                    f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                    f"{list(shape)}")
    outs = [_i64(size + lo + hi) for _, size, lo, hi in dims]
    if all(o < 1 for o in outs):
        raise RuntimeError(_too_small(mode, k, [size for _, size, _, _ in dims], outs))
    out = list(shape[:nd - k]) + outs
    neg = [o for o in out if o < 0]
    if neg:
        if mode == "reflect" and k == 2:
            raise RuntimeError("numel: integer multiplication overflow")
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg[0]}: {out}")
    return _representable(out)


def _kernel_name(mode, widths):
    """PyTorch's kernel name for a reflect/replicate pad, as its dtype errors spell it."""
    return f"{_KERNEL[mode]}{len(widths) // 2}d"


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad)/2 dims: ``'constant'`` (``ConstantPadNdBackward0``), ``'reflect'``
    (``ReflectionPad{1,2,3}DBackward0``), ``'replicate'`` (``ReplicationPad{1,2,3}DBackward0``)
    or ``'circular'``; negative widths crop. Every size is checked before a kernel runs."""
    C.tensor_arg("pad", "input", 1, input)
    if not isinstance(pad, (list, tuple)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{type(pad).__name__}")
    widths = C.int_list(pad, "pad", "pad", 2)
    _check_widths(widths)
    if value is not None:
        value = C.float_arg(value, "pad", "value", 4)
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(widths) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd = input._data.ndim
    if len(widths) // 2 > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(widths)} and input of "
                           f"dimension {nd}")
    if mode == "constant":
        _constant_shape(input._data.shape, widths)
        return PAD.constant_pad_nd(input, tuple(widths), 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    out_shape = _mode_shape(mode, input._data.shape, widths)
    if mode != "circular" and input._data.dtype == np.bool_:
        raise C.not_implemented(_kernel_name(mode, widths), input)
    return R.pad(input, widths, mode, out_shape)


# ========================================================================================
# interpolate
# ========================================================================================


_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _spatial(v, dim, shape, what, shown, fmt):
    """Whether ``v`` is a list, which must hold one value per spatial dim."""
    if not isinstance(v, (list, tuple)):
        return False
    if len(v) != dim:
        raise ValueError(
            f"Input and {what} must have the same number of spatial dimensions, but got input "
            f"with spatial dimensions of {list(shape[2:])} and {shown} {v}. Please provide input "
            f"tensor in (N, C, d1, d2, ...,dK) format and {fmt} format.")
    return True


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
        listed = _spatial(size, dim, shape, "output", "output size of",
                          "output size in (o1, o2, ...,oK)")
        output_size, scales = list(size) if listed else [size] * dim, None
    elif scale_factor is not None:
        listed = _spatial(scale_factor, dim, shape, "scale_factor", "scale_factor of shape",
                          "scale_factor in (s1, s2, ...,sK)")
        scales = [float(s) for s in scale_factor] if listed else [float(scale_factor)] * dim
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
