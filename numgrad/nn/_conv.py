"""``numgrad.nn.functional``'s convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, unfold and
fold, with PyTorch's argument parsing; the checks of ``check_shape_forward`` and the math are
``numgrad.ops.nn_conv``'s."""

from numgrad.nn import _checks as C
from numgrad.ops import nn_conv as NC
from numgrad.ops._util import Tensor

_SIGNATURES = (
    "\n * (Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, tuple of "
    "ints padding = 0, tuple of ints dilation = 1, int groups = 1)\n * (Tensor input, Tensor "
    "weight, Tensor bias = None, tuple of ints stride = 1, str padding = \"valid\", tuple of ints "
    "dilation = 1, int groups = 1)\n")
_DEFAULTS = (None, 1, 0, 1, 1)  # bias, stride, padding, dilation, groups


def _is_pair(v):
    return type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int


def _is_default(v, default):
    return v is None if default is None else type(v) is int and v == default


def _type(v):
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def _no_overload(fn, got):
    """conv{n}d's TypeError when no overload fits: it names the types of the arguments given
    (here, up to the last one that is not its default), restated from the call's arguments:
    positional ones, then keyword ones as ``name=type`` (PyTorch lists two in reverse order,
    more in its hash map's)."""
    def restate(args, kwargs):
        kws = [f"{k}={_type(v)}" for k, v in reversed(kwargs.items())]
        got = ", ".join([_type(a) for a in args] + kws) + ", " * (not args)
        return _no_overload(fn, got).args[0]
    return C.parse_error(f"{fn}() received an invalid combination of arguments - got ({got}), "
                         f"but expected one of:{_SIGNATURES}", restate)


def _conv_args(fn, n, args):
    """conv{n}d's overload resolution: int lists (an int stands for ``n``; a padding string)
    and an int groups, else its TypeError naming the arguments' types."""
    given, args = args, list(args)
    if n == 2:  # the common case first: ints or int pairs
        fast = [(v, v) if type(v) is int else v for v in args[3:6]]
        if (type(args[6]) is int and _is_pair(fast[0]) and _is_pair(fast[2])
                and (isinstance(fast[1], str) or _is_pair(fast[1]))
                and isinstance(args[0], Tensor) and isinstance(args[1], Tensor)
                and (args[2] is None or isinstance(args[2], Tensor))):
            return fast + [args[6]]
    unpack = None  # a list whose later element is no int: PyTorch's error once all else fits
    try:
        if not (isinstance(args[0], Tensor) and isinstance(args[1], Tensor)
                and (args[2] is None or isinstance(args[2], Tensor))):
            raise TypeError
        for i, name in ((3, "stride"), (4, "padding"), (5, "dilation")):
            v = args[i]
            if not (i == 4 and isinstance(v, str)):
                try:
                    t = C.int_list(v, fn, name, i + 1)
                except TypeError as e:
                    if "failed to unpack" not in str(e):
                        raise
                    unpack = unpack or e
                    continue
                args[i] = t * n if not isinstance(v, (list, tuple)) else t
        args[6] = C.int_arg(args[6], fn, "groups", 7)
    except TypeError:
        shown = list(given)
        while len(shown) > 2 and _is_default(shown[-1], _DEFAULTS[len(shown) - 3]):
            shown.pop()  # PyTorch names the arguments given (here: up to the last non-default)
        raise _no_overload(fn, ", ".join(_type(a) for a in shown)) from None
    if unpack is not None:
        raise unpack
    return args[3:]


def _conv(fn, n, input, weight, bias, stride, padding, dilation, groups):
    args = _conv_args(fn, n, (input, weight, bias, stride, padding, dilation, groups))
    return NC.conv(fn, n, input, weight, bias, *args)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) or unbatched (C, L) input (``ConvolutionBackward0``)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (``ConvolutionBackward0``); im2col + BLAS."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) or unbatched (C, D, H, W) input (one 2-D
    convolution over the depth windows)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(fn, dims, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    C.tensors(fn, "input weight bias", input, weight, bias)
    if isinstance(padding, str):
        raise C.must_be(fn, "padding", 5, "tuple of ints", padding)
    # the argument parser repeats a single int over the op's own dims
    stride, padding, output_padding, dilation = (
        C.int_tuple(fn, name, pos, v, dims)
        for name, pos, v in (("stride", 4, stride), ("padding", 5, padding),
                             ("output_padding", 6, output_padding), ("dilation", 8, dilation)))
    groups = C.int_arg(groups, fn, "groups", 7)
    return NC.conv_transposed(fn, dims, input, weight, bias, stride, padding, output_padding,
                              groups, dilation)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution of (N, Cin, L) or unbatched (Cin, L) input."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution ("deconvolution") of (N, Cin, H, W) or unbatched input with
    weight (Cin, Cout/groups, kh, kw)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution of (N, Cin, D, H, W) or unbatched (Cin, D, H, W) input with
    weight (Cin, Cout/groups, kD, kH, kW)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# ---- unfold and fold ---------------------------------------------------------------------


def _window_args(fn, values, first_pos):
    """im2col/col2im's int-pair arguments: types first, then lengths (PyTorch's order)."""
    parsed = [C.int_list(C.pair(v), fn, name, first_pos + i)
              for i, (name, v) in enumerate(values)]
    for (name, _), v in zip(values, parsed):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    return parsed


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks as columns: (N, C*kh*kw, L), or (C*kh*kw, L) for unbatched (C, H, W)
    input (``Im2ColBackward0``)."""
    C.tensor_arg("im2col", "input", 1, input)
    k, d, p, s = _window_args("im2col", (("kernel_size", kernel_size), ("dilation", dilation),
                                         ("padding", padding), ("stride", stride)), 2)
    return NC.unfold(input, k, d, p, s)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns back into an image (the adjoint of unfold, ``Col2ImBackward0``); 2-D
    (C*kh*kw, L) input gives an unbatched (C, H, W) image."""
    C.tensor_arg("col2im", "input", 1, input)
    size, k, d, p, s = _window_args(
        "col2im", (("output_size", output_size), ("kernel_size", kernel_size),
                   ("dilation", dilation), ("padding", padding), ("stride", stride)), 2)
    return NC.fold(input, size, k, d, p, s)
