"""More of ``numgrad.nn.functional``: group and instance norm, ``pad`` (every mode) and
``interpolate``, with PyTorch's argument parsing; the checks and the math are
``numgrad.ops.nn_layers``'s (group norm: the layer-norm kernel over (batch x group) rows) and
``numgrad.ops.nn_pad``'s (paddings and resampling: gathers along one dim at a time).
``numgrad/nn/functional.py`` re-exports the public names."""

import math

from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.ops import nn_layers as NL
from numgrad.ops import nn_pad as NP

__all__ = ["group_norm", "instance_norm", "pad", "interpolate", "upsample", "upsample_nearest",
           "upsample_bilinear"]

# ========================================================================================
# group norm and instance norm
# ========================================================================================


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalize each group of channels of each sample over the group's channels and space,
    then scale and shift per channel (``NativeGroupNormBackward0``)."""
    C.tensor_arg("group_norm", "input", 1, input)
    num_groups = C.int_arg(num_groups, "group_norm", "num_groups", 2)
    eps = C.float_arg(eps, "group_norm", "eps", 5)
    return NL.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Normalize each channel of each sample over its space: batch norm of the (1, N*C, ...)
    view, as PyTorch computes it (``ViewBackward0`` over ``NativeBatchNormBackward0``;
    ``numgrad.ops.group_norm.instance_norm``); running statistics get the batch mean of the
    per-sample updates."""
    C.tensor_arg("instance_norm", "input", 1, input)
    return NL.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                            momentum, eps, F.batch_norm)


# ========================================================================================
# padding
# ========================================================================================


def _check_widths(widths):
    """The argument parser's limits on an ``int[]``: every width fits in int64."""
    for i, w in enumerate(widths):
        if not -(1 << 63) <= w < (1 << 63):
            raise TypeError(f"pad(): argument 'pad' failed to unpack the object at pos {i + 1} "
                            "with error \"Overflow when unpacking long long\"")
        if w == -(1 << 63):  # PyTorch's symbolic-int sentinel
            raise RuntimeError("SymIntArrayRef expected to contain only concrete integers")


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
    return NP.pad(input, widths, mode, value)


# ========================================================================================
# interpolate
# ========================================================================================




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
    (``Upsample{Bilinear,Bicubic}2DAaBackward0``, PIL's widened filters); ``'area'`` of 5-D
    input too. Not yet: the other modes of 5-D input, ``'lanczos'``, uint8 input."""
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
        if dim == 3:
            return F.adaptive_avg_pool3d(input, output_size)
    NP.check_mode(input, mode, antialias, dim)
    if output_size is None:
        output_size = [math.floor(float(shape[i + 2]) * scales[i]) for i in range(dim)]
    output_size = [C.int_arg(v, "interpolate", "size", 2) for v in output_size]
    return NP.upsample(input, mode, antialias, output_size, scales, align_corners)


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
