"""``F.conv3d``: PyTorch's argument and shape checks, in its order; the convolution is the
op ``numgrad.ops.conv.conv3d`` (one 2-D convolution over the depth windows, recorded as
PyTorch's one ``ConvolutionBackward0`` node)."""

from numgrad.nn import _checks as C
from numgrad.nn import _functional_extra as FX
from numgrad.nn import functional as F
from numgrad.ops import conv as CV
from numgrad.ops import shape as sh
from numgrad.tensor import Tensor

_SIGNATURES = (
    "\n * (Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, tuple of "
    "ints padding = 0, tuple of ints dilation = 1, int groups = 1)\n * (Tensor input, Tensor "
    "weight, Tensor bias = None, tuple of ints stride = 1, str padding = \"valid\", tuple of ints "
    "dilation = 1, int groups = 1)\n")
_DEFAULTS = (None, 1, 0, 1, 1)


def _triple(v, name, pos):
    t = C.int_list(v, "conv3d", name, pos)
    return t * 3 if not isinstance(v, (list, tuple)) else t  # an int means (v, v, v)


def _args(input, weight, bias, stride, padding, dilation, groups):
    try:
        if not (isinstance(input, Tensor) and isinstance(weight, Tensor)
                and (bias is None or isinstance(bias, Tensor))):
            raise TypeError
        stride = _triple(stride, "stride", 4)
        dilation = _triple(dilation, "dilation", 6)
        if not isinstance(padding, str):
            padding = _triple(padding, "padding", 5)
        groups = C.int_arg(groups, "conv3d", "groups", 7)
    except TypeError:
        args = [input, weight, bias, stride, padding, dilation, groups]
        while len(args) > 2 and args[-1] is _DEFAULTS[len(args) - 3]:
            args.pop()  # PyTorch names the arguments given (here: up to the last non-default)
        got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__ for a in args)
        raise TypeError(f"conv3d() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:{_SIGNATURES}") from None
    return stride, padding, dilation, groups


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    stride, padding, dilation, groups = _args(input, weight, bias, stride, padding, dilation,
                                              groups)
    nd = input._data.ndim
    if nd not in (4, 5):
        raise RuntimeError("Expected 4D (unbatched) or 5D (batched) input to conv3d, but got "
                           f"input of size: {list(input._data.shape)}")
    unbatched = nd == 4
    if unbatched:
        input = sh.unsqueeze(input, 0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,)
        elif padding == "same":
            input, padding = F._conv_same(input, weight, stride, dilation, groups)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    stride, padding, dilation, _, out = FX._check_conv(
        input._data.shape, weight._data.shape, stride, padding, dilation, groups,
        bias._data.shape if bias is not None else None)
    FX._check_types(input, weight, bias)
    F._check_empty_input(input._data.shape)
    y = CV.conv3d(input, weight, bias, stride, padding, dilation, groups, out)
    return sh.squeeze(y, 0) if unbatched else y

