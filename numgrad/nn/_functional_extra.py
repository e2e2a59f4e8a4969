"""More of ``numgrad.nn.functional``: group and instance norm, ``pad`` (every mode) and
``interpolate``, with PyTorch's argument parsing; the checks and the math are
``numgrad.ops.nn_layers``'s (group norm: the layer-norm kernel over (batch x group) rows) and
``numgrad.ops.nn_pad``'s (paddings and resampling: gathers along one dim at a time).
``numgrad/nn/functional.py`` re-exports the public names."""

from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.ops import nn_layers as NL
from numgrad.ops import nn_pad as NP

# ========================================================================================
# group norm and instance norm
# ========================================================================================


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalize each group of channels of each sample over the group's channels and space,
    then scale and shift per channel (``NativeGroupNormBackward0``)."""
    NL.group_norm_view(input, num_groups)
    return NL.group_norm(*C.parse("group_norm", C.GROUP_NORM, input, num_groups, weight, bias,
                                  eps))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Normalize each channel of each sample over its space: batch norm of the (1, N*C, ...)
    view, as PyTorch computes it (``ViewBackward0`` over ``NativeBatchNormBackward0``;
    ``numgrad.ops.group_norm.instance_norm``); running statistics get the batch mean of the
    per-sample updates."""
    if use_input_stats:
        NL.verify_spatial_size(input.size())
    x, w, b, rm, rv, *rest = C.parse("instance_norm", C.INSTANCE_NORM, input, weight, bias,
                                     running_mean, running_var, use_input_stats, momentum, eps)
    return NL.instance_norm(x, rm, rv, w, b, *rest)


# ========================================================================================
# padding
# ========================================================================================


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad)/2 dims: ``'constant'`` (``ConstantPadNdBackward0``), ``'reflect'``
    (``ReflectionPad{1,2,3}DBackward0``), ``'replicate'`` (``ReplicationPad{1,2,3}DBackward0``)
    or ``'circular'``; negative widths crop. Every size is checked before a kernel runs."""
    C.tensor_arg("pad", "input", 1, input)
    if not isinstance(pad, (list, tuple)):
        raise C.must_be("pad", "pad", 2, "tuple of ints", pad)
    widths = C.int_list(pad, "pad", "pad", 2)
    NP.check_widths(widths)
    mode = C.str_arg(mode, "pad", "mode", 3)
    if value is not None:
        value = C.float_arg(value, "pad", "value", 4)
    return NP.pad(input, widths, mode, value)


# ========================================================================================
# interpolate
# ========================================================================================


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, L) or (N, C, H, W) input: ``'nearest'`` (``UpsampleNearest{1,2}D
    Backward0``), ``'nearest-exact'`` (``UpsampleNearestExact{1,2}DBackward0``), ``'area'``
    (adaptive average pooling, as PyTorch), ``'linear'`` (3-D), ``'bilinear'`` and
    ``'bicubic'`` (4-D, ``UpsampleBicubic2DBackward0``), with or without ``align_corners``; by
    ``size`` or ``scale_factor``; ``antialias=True`` with ``'bilinear'`` or ``'bicubic'``
    (``Upsample{Bilinear,Bicubic}2DAaBackward0``, PIL's widened filters); ``'area'`` of 5-D
    input too. Not yet: the other modes of 5-D input, ``'lanczos'``, uint8 input."""
    C.attribute(input, "dim")  # (PyTorch's input.dim() - 2)
    output_size, scales, align_corners = NP.resize_args(
        input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    dim = input._data.ndim - 2
    if mode == "area" and 1 <= dim <= 3:  # PyTorch's area mode: adaptive average pooling
        pool = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[dim - 1]
        return pool(input, NP.scaled_size(input, scales) if output_size is None else output_size)
    NP.check_mode(input, mode, antialias, dim)
    if output_size is None:
        output_size = NP.scaled_size(input, scales)
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
