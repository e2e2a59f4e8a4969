"""The convolutions of ``numgrad.nn.functional`` below its argument parsing: PyTorch's
``check_shape_forward`` and its kernels' checks in its order, each call's geometry
(``numgrad.ops.conv.ConvGeom``) built from the checked parameters and output size, 1-D
convolutions run as 2-D ones of unit height, and an empty input or weight given PyTorch's
empty (or bias-filled) output; the math is the declared ops of ``numgrad.ops.conv`` and
``numgrad.ops.conv_transpose`` (PyTorch's one ``ConvolutionBackward0`` node;
``Im2ColBackward0``/``Col2ImBackward0`` for unfold/fold, batched or not)."""

import numpy as np

from numgrad import _dtype
from numgrad.ops import conv as CV
from numgrad.ops import conv_transpose as CT
from numgrad.ops import nn_checks as K
from numgrad.ops import pad as PAD
from numgrad.ops import shape as sh
from numgrad.ops.promote import _check_cast


def unit_height(shape):
    """A 1-D convolution's (N, C, L) shape as the 2-D op's (N, C, 1, L)."""
    return tuple(shape[:2]) + (1,) + tuple(shape[2:])


def _empty_shape(input, weight, space):
    """The output shape of a convolution whose input or weight is empty (PyTorch's output
    for an input of no channels has none either), else None."""
    x, w = input._data, weight._data
    if x.size and w.size:
        return None
    return (x.shape[0], w.shape[0] if x.shape[1] else 0) + tuple(space)


def convolution(input, weight, bias, stride, padding, dilation, groups, out):
    """A checked 1-D or 2-D convolution with output size ``out`` (``ConvolutionBackward0``)."""
    x, w = input._data.shape, weight._data.shape
    unit = len(w) == 3
    if unit:
        x, w = unit_height(x), unit_height(w)
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
    geo = CV.make_geom(x, w, w[2:], stride, padding, dilation, groups,
                       (1,) + out if unit else out)
    return CV.convolution(input, weight, bias, geo, unit, _empty_shape(input, weight, out))


def conv_transpose(input, weight, bias, stride, padding, dilation, groups, out):
    """A checked 1-D or 2-D transposed convolution of output size ``out`` (the 2-D op's
    ``ConvolutionBackward0``; an empty input or weight gives the bias alone)."""
    x, w = input._data.shape, weight._data.shape
    unit = len(w) == 3
    if unit:
        x, w, out = unit_height(x), unit_height(w), (1,) + out
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
    n, oc = x[0], w[1] * groups
    geo = CV.make_geom((n, oc) + out, w, w[2:], stride, padding, dilation, groups, x[2:])
    if input._data.size == 0 or weight._data.size == 0 or 0 in out:
        return CV.convolution(input, weight, bias, geo, unit, (n, oc) + out[unit:])
    return CT._conv_transpose(input, weight, bias, geo, unit, (n, oc) + out)


def _expand_param(v, name, dim):
    if len(v) == dim:
        return v
    if len(v) == 1:
        return v * dim
    raise RuntimeError(f"expected {name} to be a single integer value or a list of {dim} "
                       f"values to match the convolution dimensions, but got {name}={list(v)}")


def _check_empty_input(x_shape):
    """PyTorch's convolutions take an empty input only through an empty batch or channel
    dim (they return an empty or bias-filled output without running a kernel). Returns
    whether the kernel runs (the input is not empty), whose own checks then follow."""
    if 0 not in x_shape:
        return True
    if x_shape[0] and x_shape[1]:
        raise RuntimeError("Only zero batch or zero channel inputs are supported, but got input "
                           f"shape: {list(x_shape)}")
    return False


def _onednn(x_shape, w_shape, groups, float32):
    """Whether PyTorch runs oneDNN's kernel: for float32 input that is grouped, batched
    (N > 1), large (N*C*H*W > 20480) or has a kernel over 3 in both last dims (a 1-D
    convolution's shapes as the 2-D ones of unit height it runs as)."""
    if len(w_shape) == 3:
        x_shape, w_shape = unit_height(x_shape), unit_height(w_shape)
    return float32 and (groups > 1 or (w_shape[-1] > 3 and w_shape[-2] > 3) or x_shape[0] > 1
                        or x_shape[0] * x_shape[1] * x_shape[2] * x_shape[3] > 20480)


def _zero_dilation(x_shape, w_shape, dilation, groups, float32, transposed=False):
    """PyTorch's message for a zero dilation (of a convolution or a ``transposed`` one), from
    the kernel it picks: oneDNN's (``_onednn``; None: oneDNN runs a 1-D or 2-D transposed 1x1
    kernel); else its own kernels' (a 1-D convolution runs as a 2-D one on a unit height)."""
    if _onednn(x_shape, w_shape, groups, float32):
        if len(w_shape) == 3:
            w_shape = unit_height(w_shape)
        if not transposed:
            return "non-positive dilation is not supported"
        if len(w_shape) == 4 and max(w_shape[2:]) == 1:  # oneDNN runs a 1x1 kernel
            return None
        return "dimensions are invalid" if len(w_shape) == 5 else _DECONV
    if len(w_shape) == 3:
        w_shape, dilation = unit_height(w_shape), (1,) + dilation
    if transposed:
        names = ("depth", "height", "width")[5 - len(w_shape):]
        return "dilation should be greater than zero, but got " + ", ".join(
            f"dilation_{n}: {v}" for n, v in zip(names, dilation))
    return f"dilation should be greater than zero, but got {list(dilation)}"


def _check_conv(x_shape, w_shape, stride, padding, dilation, groups, bias_shape,
                transposed=False, output_padding=(0,), float32=False):
    """PyTorch's checks of a convolution, in its order; returns the expanded parameters and
    the output size (a zero dilation of a convolution is checked after its sizes: its
    message depends on whether ``float32`` input would run PyTorch's oneDNN kernel)."""
    wnd = len(w_shape)
    if wnd < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = wnd - 2
    stride = _expand_param(tuple(stride), "stride", dim)
    padding = _expand_param(tuple(padding), "padding", dim)
    dilation = _expand_param(tuple(dilation), "dilation", dim)
    output_padding = _expand_param(tuple(output_padding), "output_padding", dim)
    if min(padding) < 0:
        raise RuntimeError("negative padding is not supported")
    if min(output_padding) < 0:
        raise RuntimeError("negative output_padding is not supported")
    if min(stride) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) < 0:
        raise RuntimeError("dilation should be greater than zero")
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
        msg = min(dilation) == 0 and _zero_dilation(x_shape, w_shape, dilation, groups,
                                                    float32, True)
        if msg:
            raise RuntimeError(msg)
        for op, s, d in zip(output_padding, stride, dilation):
            if op >= s and op >= d:  # a 1-D one named as the 2-D one of unit height
                names = ("depth", "height", "width")[3 - max(dim, 2):]
                unit = ((0,), (1,), (1,)) if dim == 1 else ((), (), ())
                parts = [f"output_padding_{n}: {v}" for n, v in zip(names, unit[0] +
                                                                        output_padding)]
                parts += [f"stride_{n}: {v}" for n, v in zip(names, unit[1] + stride)]
                parts += [f"dilation_{n}: {v}" for n, v in zip(names, unit[2] + dilation)]
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
    if min(dilation) == 0:
        raise RuntimeError(_zero_dilation(x_shape, w_shape, dilation, groups, float32))
    out = tuple(CV.blocks(n, k, s, p, d) for n, k, s, p, d in zip(
        x_shape[2:], w_shape[2:], stride, padding, dilation))
    return stride, padding, dilation, output_padding, out


def _check_types(input, weight, bias, groups, kernel):
    """The weight's and bias's dtypes are the input's (oneDNN's message, or the kernel's
    where PyTorch runs its own: ``_onednn``), and ``kernel`` has the input's dtype: not bool
    (integer convolutions run; of the transposed ones, int64 only)."""
    x = input._data
    onednn = _onednn(x.shape, weight._data.shape, groups, x.dtype == np.float32)
    # PyTorch's own 2-D transposed kernel adds the bias into its output: any bias dtype the
    # result can be cast back to is taken (the kernel's dtype is checked first)
    added = kernel == "slow_conv_transpose2d_out_cpu" and not onednn
    if added and (x.dtype == np.bool_ or (x.dtype.kind in "iu" and x.dtype != np.int64)):
        raise K.not_implemented(kernel, input)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.dtype != x.dtype:
            if added and name == "bias":
                _check_cast(input, t)
                continue
            if not onednn:
                K.same_type(input, t)
            raise RuntimeError(
                f"Input type ({K.type_name(input)}) and {name} type ({K.type_name(t)}) should be "
                f"the same or input should be a MKLDNN tensor and {name} is a dense tensor")
    if x.dtype == np.bool_ or ("transpose" in kernel and x.dtype.kind in "iu"
                               and x.dtype != np.int64):
        raise K.not_implemented(kernel, input)


def _batched(fn, input, n):
    """conv{n}d's rank check; (input with a batch dim, whether one was added)."""
    nd = input._data.ndim
    if nd not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {fn}, "
                           f"but got input of size: {list(input._data.shape)}")
    return (sh.unsqueeze(input, 0), True) if nd == n + 1 else (input, False)


def _string_padding(padding, input, weight, stride, dilation, groups):
    """A padding string: 'valid' is none; 'same' (after PyTorch's checks) pads the input on
    the far side by the odd part of an even kernel's padding and leaves the symmetric rest
    (returned) to the convolution."""
    if padding == "valid":
        return input, (0,)
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    w_shape, nd = weight._data.shape, input._data.ndim
    if len(w_shape) < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if len(w_shape) != nd:
        raise RuntimeError(f"Expected {len(w_shape)}-dimensional input for {len(w_shape)}-"
                           f"dimensional weight{list(w_shape)}, but got {nd}-dimensional input "
                           f"of size {list(input._data.shape)} instead")
    for name, v in (("stride", stride), ("dilation", dilation)):
        if len(v) not in (1, nd - 2):
            raise RuntimeError(f"{name} cannot broadcast to {nd - 2} dimensions")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    dilation = dilation * (nd - 2) if len(dilation) == 1 else dilation
    left, widths = [], []
    for d, k in zip(dilation, w_shape[2:]):
        total = d * (k - 1)
        left.append(K.ctrunc(total, 2))
        widths[:0] = [0, total - 2 * left[-1]]
    if any(widths):
        input = PAD.constant_pad_nd(input, tuple(widths), 0.0)
    return input, tuple(left)


def _bias_shape(bias):
    return bias._data.shape if bias is not None else None


_DECONV = ("could not create a primitive descriptor for the deconvolution forward propagation "
           "primitive. Run workload with environment variable ONEDNN_VERBOSE=all to get "
           "additional diagnostic information.")


def _onednn_transposed_sizes(w_shape, out):
    """oneDNN's errors for the sizes of a transposed convolution it runs: a negative output
    size, then an empty weight (an output size of 0 gives an empty output)."""
    if min(out) < 0:
        raise RuntimeError("could not construct a memory descriptor using a format tag")
    if 0 in w_shape[1:]:
        raise RuntimeError(_DECONV)


def _check_transposed_sizes(x_shape, w_shape, out, groups, float32):
    """PyTorch's checks of a transposed convolution after its argument checks, on the 4-D
    shapes (1-D ones carry a unit height): an empty input must have an empty batch, whose
    output size must not be negative; a kernel runs only on a nonempty kernel and weight and
    a positive output size (oneDNN's messages where it runs: ``_onednn``)."""
    if not _check_empty_input(x_shape):
        shape = (x_shape[0], w_shape[1]) + tuple(out)
        for i, v in enumerate(shape):
            if v < 0:
                raise RuntimeError(f"invalid shape dimension {v} at index {i} of shape "
                                   f"{list(shape)}")
        return
    if _onednn(x_shape, w_shape, groups, float32):
        return _onednn_transposed_sizes(w_shape, out)
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


def _conv_transpose3d(x, weight, bias, stride, padding, output_padding, groups, dilation, out):
    """The 3-D transposed convolution's own checks (one 2-D transposed convolution of every
    input plane placed along depth, ``numgrad.ops.conv_transpose.conv_transpose3d``)."""
    _check_types(x, weight, bias, groups, "slow_conv_transpose3d_out_cpu")
    n, cin, depth, h, w = x._data.shape
    onednn = _onednn(x._data.shape, weight._data.shape, groups, x._data.dtype == np.float32)
    if n * cin * depth * h * w:
        if onednn:
            _onednn_transposed_sizes(weight._data.shape, out)
        elif 0 in weight._data.shape:
            raise RuntimeError(
                "non-empty 5D (n_output_plane x n_input_plane x kernel_depth x kernel_height x "
                f"kernel_width) tensor expected for weight, but got: {list(weight._data.shape)}")
    if min(out) < 1 and n * cin * depth * h * w and not onednn:
        raise RuntimeError(
            f"Given input size per channel: ({depth} x {h} x {w}). Calculated output size per "
            f"channel: ({' x '.join(map(str, out))}). Output size is too small")
    return CT.conv_transpose3d(x, weight, bias, stride, padding, output_padding, dilation,
                               groups, out)


def _window_checks(k, d, p, s, order):
    msgs = {"k": (min(k) > 0, "kernel size should be greater than zero, but got kernel_height: "
                  f"{k[0]} kernel_width: {k[1]}"),
            "d": (min(d) > 0, "dilation should be greater than zero, but got dilation_height: "
                  f"{d[0]} dilation_width: {d[1]}"),
            "p": (min(p) >= 0, "padding should be non-negative, but got pad_height: "
                  f"{p[0]} pad_width: {p[1]}"),
            "s": (min(s) > 0, "stride should be greater than zero, but got stride_height: "
                  f"{s[0]} stride_width: {s[1]}")}
    for key in order:
        ok, msg = msgs[key]
        if not ok:
            raise RuntimeError(msg)


def conv(fn, n, input, weight, bias, stride, padding, dilation, groups):
    """conv{n}d of parsed arguments (int tuples or a padding string): PyTorch's checks in
    its order, then the op (``ConvolutionBackward0``); unbatched input gets a batch of one."""
    input, unbatched = _batched(fn, input, n)
    if bias is not None and bias._data.dtype != input._data.dtype:
        raise RuntimeError(f"Input type ({_dtype.cpp_name(input._data.dtype)}) and bias type "
                           f"({_dtype.cpp_name(bias._data.dtype)}) should be the same")
    if isinstance(padding, str):
        input, padding = _string_padding(padding, input, weight, stride, dilation, groups)
    x_shape, w_shape = input._data.shape, weight._data.shape
    stride, padding, dilation, _, out = _check_conv(
        x_shape, w_shape, stride, padding, dilation, groups, _bias_shape(bias),
        float32=input._data.dtype == np.float32)
    if n != 2:
        _check_types(input, weight, bias, groups, "compute_columns3d" if n == 3 else
                     "slow_conv2d_cpu")
    runs = _check_empty_input(unit_height(x_shape) if n == 1 else x_shape)
    if runs and 0 in w_shape[2:]:
        if _onednn(x_shape, w_shape, groups, input._data.dtype == np.float32):
            raise RuntimeError(_DECONV.replace("deconvolution", "convolution"))
        # a 1-D convolution is checked as the 2-D one it runs as (PyTorch's messages name
        # the (N, C, 1, L) shape)
        k = unit_height(w_shape)[2:] if n == 1 else w_shape[2:]
        raise RuntimeError("kernel size should be greater than zero, but got" + (
            f" kernel_height: {k[0]} kernel_width: {k[1]}" if n < 3 else
            f": {k[0]} x {k[1]} x {k[2]} (TxHxW)"))
    if n == 3:
        y = CV.conv3d(input, weight, bias, stride, padding, dilation, groups, out)
    else:
        if n == 2:
            _check_types(input, weight, bias, groups, "slow_conv2d_cpu")
        y = convolution(input, weight, bias, stride, padding, dilation, groups, out)
    return sh.squeeze(y, 0) if unbatched else y


def conv_transposed(fn, dims, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    """conv_transpose{dims}d of parsed int-tuple arguments: PyTorch's checks in its order,
    then the op; unbatched input gets a batch of one."""
    if dims > 1:
        input, unbatched = _batched(fn, input, dims)
    else:
        unbatched = input._data.ndim == 2
        input = sh.unsqueeze(input, 0) if unbatched else input
    float32 = input._data.dtype == np.float32
    stride, padding, dilation, output_padding, out = _check_conv(
        input._data.shape, weight._data.shape, stride, padding, dilation, groups,
        _bias_shape(bias), True, output_padding, float32)
    if dims == 3:
        res = _conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                dilation, out)
        return sh.squeeze(res, 0) if unbatched else res
    _check_types(input, weight, bias, groups, "slow_conv_transpose2d_out_cpu")
    x, w = input._data.shape, weight._data.shape
    if dims == 1:  # checked as a 2-D convolution of unit height
        _check_transposed_sizes(unit_height(x), unit_height(w), (1,) + out, groups, float32)
    else:
        _check_transposed_sizes(x, w, out, groups, float32)
    res = conv_transpose(input, weight, bias, stride, padding, dilation, groups, out)
    return sh.squeeze(res, 0) if unbatched else res


def unfold(input, k, d, p, s):
    """Sliding blocks of (N, C, H, W) or (C, H, W) input as columns, after PyTorch's im2col
    checks (``Im2ColBackward0``)."""
    _window_checks(k, d, p, s, "kdps")
    shape = input._data.shape
    nd = len(shape)
    if nd < 3:
        raise K.dim_error(1 if nd < 2 else 2, nd)
    if not ((nd == 3 and 0 not in shape) or (nd == 4 and 0 not in shape[1:])):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {list(shape)}")
    h, w = shape[-2:]
    out = (CV.blocks(h, k[0], s[0], p[0], d[0]), CV.blocks(w, k[1], s[1], p[1], d[1]))
    if min(out) < 1:
        raise RuntimeError(
            f"Given input with spatial size ({h}, {w}), kernel_size=({k[0]}, {k[1]}), dilation=("
            f"{d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of sliding "
            f"blocks as ({out[0]}, {out[1]}), but its components must be at least one.")
    K.require_float(input, "im2col_out_cpu")
    shape = shape if nd == 4 else (1,) + shape  # unbatched: one image
    geo = CV.make_geom(shape, (1, shape[1]) + k, k, s, p, d, 1, out)
    return CV.im2col(input, geo)


def fold(input, output_size, k, d, p, s):
    """(N, C*kh*kw, L) or (C*kh*kw, L) columns summed back into an image, after PyTorch's
    col2im checks (``Col2ImBackward0``)."""
    _window_checks(k, d, p, s, "ksdp")
    oh, ow = output_size
    shape = input._data.shape
    nd = len(shape)
    if not ((nd == 2 and 0 not in shape) or (nd == 3 and 0 not in shape[1:])):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch "
                           f"size and non-zero dimensions for input, but got: {list(shape)}")
    bd = 0 if nd == 3 else -1
    planes, length = shape[bd + 1], shape[bd + 2]
    if planes % (k[0] * k[1]):
        raise RuntimeError(
            f"Expected size of input's dimension {bd + 1} to be divisible by the product of "
            f"kernel_size, but got input.size({bd + 1})={planes} and kernel_size=({k[0]}, "
            f"{k[1]}).")
    nb = (CV.blocks(oh, k[0], s[0], p[0], d[0]), CV.blocks(ow, k[1], s[1], p[1], d[1]))
    geom = (f"Given output_size=({oh}, {ow}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, "
            f"{d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), ")
    if length != nb[0] * nb[1]:
        raise RuntimeError(
            f"{geom}expected size of input's dimension {bd + 2} to match the calculated number of "
            f"sliding blocks {nb[0]} * {nb[1]} = {nb[0] * nb[1]}, but got input.size({bd + 2})="
            f"{length}.")
    if min(nb) < 1:
        raise RuntimeError(f"{geom}calculated shape of the array of sliding blocks as ({nb[0]}, "
                           f"{nb[1]}), which is too small (non-positive)")
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Expected output spatial size to be positive, but got: output_size=("
                           f"{oh}, {ow}).")
    K.require_float(input, "col2im_out_cpu")
    n, c = (shape[0] if nd == 3 else 1), planes // (k[0] * k[1])  # unbatched: one image
    geo = CV.make_geom((n, c) + tuple(output_size), (1, c) + k, k, s, p, d, 1, nb)
    return CV.col2im(input, geo)
