"""``numgrad.nn.functional.pad`` and ``interpolate`` below their argument parsing: PyTorch's
size and dtype checks in its order and with its messages, then the ops of ``numgrad.ops.pad``
and ``numgrad.ops.resample`` (gathers along one dim at a time, whose adjoints are
scatter-adds)."""


import numpy as np

from numgrad.ops import nn_checks as K
from numgrad.ops import pad as PAD
from numgrad.ops import resample as R
from numgrad.ops._util import dtype_of

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


def check_widths(widths):
    """The argument parser's limits on an ``int[]``: every width fits in int64."""
    for i, w in enumerate(widths):
        if not -(1 << 63) <= w < (1 << 63):
            raise TypeError(f"pad(): argument 'pad' failed to unpack the object at pos {i + 1} "
                            "with error \"Overflow when unpacking long long\"")
        if w == -(1 << 63):  # PyTorch's symbolic-int sentinel
            raise RuntimeError("SymIntArrayRef expected to contain only concrete integers")


def pad(input, widths, mode, value):
    """``input`` padded by parsed int ``widths`` (``value``: a float or None) in ``mode``
    after PyTorch's checks: ``ConstantPadNdBackward0``, ``ReflectionPad{1,2,3}DBackward0``,
    ``ReplicationPad{1,2,3}DBackward0`` or circular padding; negative widths crop."""
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
        raise K.not_implemented(_kernel_name(mode, widths), input)
    return R.pad(input, widths, mode, out_shape)


_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def check_mode(input, mode, antialias, dim):
    """PyTorch's errors for an interpolation mode it has no kernel for at this rank (and the
    ones numgrad does not have)."""
    key = (mode + "-aa" if antialias else mode, dim) if isinstance(mode, str) else None
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
        check_dtype(input, mode, antialias, dim)
        raise NotImplementedError(f"interpolate mode '{mode}' on {dim + 2}-D input is not "
                                  "supported by numgrad")


def check_dtype(input, mode, antialias, dim):
    """PyTorch's error for an integer or bool ``input`` of an interpolation mode (the kernel
    it names differs by rank, and its antialiased kernels take only float32 and float64);
    uint8 input is gathered by the nearest modes; of the other modes PyTorch resizes it by:
    numgrad's."""
    floating = dtype_of(input).is_floating_point
    if floating and not (antialias and input._data.dtype not in (np.float32, np.float64)):
        return
    if input._data.dtype == np.uint8 and mode in ("nearest", "nearest-exact") and not antialias:
        return  # a gather
    if input._data.dtype == np.uint8 and dim == 2:
        raise NotImplementedError(f"interpolate mode '{mode}'{' with antialias=True' * antialias}"
                                  " on uint8 input is not supported by numgrad")
    if antialias:
        kernel = "compute_index_ranges_weights"
    elif mode == "bicubic":
        kernel = "compute_indices_weights_cubic"
    elif dim == 2:
        kernel = f"upsample_{'bilinear' if mode == 'bilinear' else 'nearest'}2d_channels_last"
    else:
        kernel = f"compute_indices_weights_{'nearest' if 'nearest' in mode else 'linear'}"
    raise K.not_implemented(kernel, input)


def upsample(input, mode, antialias, output_size, scales, align_corners):
    """``input`` resized to the parsed ``output_size`` after PyTorch's size and dtype checks
    (``UpsampleNearest{1,2,3}DBackward0``, ``UpsampleTrilinear3DBackward0``, ...)."""
    shape, dim = input._data.shape, input._data.ndim - 2
    names = ("D", "H", "W")[3 - dim:]
    if min(shape[2:]) <= 0 or min(output_size) <= 0:
        ins = ", ".join(f"{a}: {b}" for a, b in zip(names, shape[2:]))
        outs = ", ".join(f"{a}: {b}" for a, b in zip(names, output_size))
        raise RuntimeError("Input and output sizes should be greater than 0, but got input "
                           f"({ins}){' and' if dim == 1 else ''} output ({outs})")
    if 0 in shape[1:]:  # only the batch may be empty
        raise RuntimeError(f"Non-empty {dim + 2}D data tensor expected but got a tensor with "
                           f"sizes {list(shape)}")
    check_dtype(input, mode, antialias, dim)
    return R.upsample(input, mode, antialias, output_size, scales, align_corners)


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


def scaled_size(input, scales):
    """The output size ``scales`` give ``input``'s spatial dims (truncated, as PyTorch's
    ``sym_int``, with its errors for a scale that is not a number)."""
    shape = input._data.shape
    return [int(shape[i + 2] * s) for i, s in enumerate(scales)]


def resize_args(input, size, scale_factor, mode, align_corners, recompute_scale_factor,
                antialias):
    """``interpolate``'s checks of its arguments, in PyTorch's order and with its messages:
    the output size (a list, or None when given by scale), the scales (or None) and
    align_corners (False for the interpolating modes when omitted)."""
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
        scales = list(scale_factor) if listed else [scale_factor] * dim
        output_size = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if scales is not None and not (recompute_scale_factor or mode == "area"):
        scales = _float_scales(scales, mode, antialias, dim, align_corners)
    if recompute_scale_factor and scales is not None:
        output_size, scales = scaled_size(input, scales), None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and dim == 2):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode == "lanczos" and dim == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
        raise NotImplementedError("interpolate mode 'lanczos' is not supported by numgrad")
    if mode not in ("nearest", "nearest-exact", "area") and not isinstance(
            align_corners, (bool, np.bool_)):
        passed = size if isinstance(size, (list, tuple)) else output_size
        raise _upsample_mismatch(mode, antialias, dim, passed, align_corners, scales)
    return output_size, scales, align_corners


def _upsample_name(mode, antialias, dim):
    if antialias:
        return f"_upsample_{mode}{dim}d_aa"
    if mode == "nearest-exact":
        return f"_upsample_nearest_exact{dim}d"
    return f"upsample_{mode}{dim}d"


def _upsample_mismatch(mode, antialias, dim, output_size, align_corners, scales):
    """The parser's TypeError for arguments that match no overload of the upsampling C
    function ``interpolate`` calls (an align_corners not a bool, a first scale not a number)."""
    interpolating = mode not in ("nearest", "nearest-exact")
    flag = "bool align_corners, " if interpolating else ""
    got = ["Tensor", type(output_size).__name__] + (
        [type(align_corners).__name__] if interpolating else []) + [type(scales).__name__]
    names = ("",) if dim == 1 else ("_h", "_w") if dim == 2 else ("_d", "_h", "_w")
    floats = ", ".join(f"float scales{n} = None" for n in names)
    return TypeError(
        f"{_upsample_name(mode, antialias, dim)}() received an invalid combination of arguments "
        f"- got ({', '.join(got)}), but expected one of:\n"
        f" * (Tensor input, tuple of ints output_size, {flag}tuple of floats scale_factors)\n"
        f" * (Tensor input, tuple of ints output_size, {flag}{floats}, *, Tensor out = None)\n")


def _float_scales(scales, mode, antialias, dim, align_corners):
    """The scale factors as floats, with the parser's errors for others (a bool counts)."""
    out = []
    for i, s in enumerate(scales):
        if not isinstance(s, (int, float, np.integer, np.floating, np.bool_)):
            if i == 0 or (mode not in ("nearest", "nearest-exact", "area")
                          and not isinstance(align_corners, (bool, np.bool_))):
                raise _upsample_mismatch(mode, antialias, dim, None, align_corners, scales)
            raise TypeError(f"{_upsample_name(mode, antialias, dim)}(): argument "
                            "'scale_factors' must be tuple of floats, but found element of type "
                            f"{type(s).__name__} at pos {i + 1}")
        out.append(float(s))
    return out
