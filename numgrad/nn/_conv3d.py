"""``F.conv3d``: a 3-D convolution as one 2-D convolution (the conv2d op, its kernels and
its backward) over the depth windows.

Each output depth ``od`` reads the input planes ``od * sd + kd * dd`` (``kd`` < KD). Those
KD planes, for every output depth, are stacked next to the channels, group by group, so
that conv2d with the weight laid out (OC, KD * C/groups, KH, KW) sums over them:

    y[n, o, od] = sum_{kd, c} conv2d(x[n, c, od * sd + kd * dd], W[o, c, kd])

The gradients come from the ops used (slicing, stack, permute, reshape, conv2d), recorded
as PyTorch's one ``ConvolutionBackward0`` node; no kernel of its own. PyTorch's argument
and shape checks, in its order, come first.
"""

from numgrad.nn import _functional_extra as FX
from numgrad.nn import functional as F
from numgrad.ops import shape as sh
from numgrad.ops.named_composite import record
from numgrad.tensor import Tensor

_SIGNATURES = (
    "\n * (Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, tuple of "
    "ints padding = 0, tuple of ints dilation = 1, int groups = 1)\n * (Tensor input, Tensor "
    "weight, Tensor bias = None, tuple of ints stride = 1, str padding = \"valid\", tuple of ints "
    "dilation = 1, int groups = 1)\n")
_DEFAULTS = (None, 1, 0, 1, 1)


def _triple(v, name, pos):
    t = FX._conv_ints("conv3d", name, pos, v)
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
        groups = F._int_arg(groups, "conv3d", "groups", 7)
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
    y = record("ConvolutionBackward0",
               lambda x, w, b: _by_conv2d(x, w, b, stride, padding, dilation, groups, out),
               (input, weight, bias), (input, weight), ("input", "weight"))
    return sh.squeeze(y, 0) if unbatched else y


def _by_conv2d(x, weight, bias, stride, padding, dilation, groups, out):
    # laid out (N, D, C, H*W) first, so that each depth window is a strided slice and the
    # stacked windows land in conv2d's channel order; everything stays 4-D/5-D (kernels the
    # other convolutions and layers compile too)
    n, c, d, h, w = x._data.shape
    oc, cg, kd, kh, kw = weight._data.shape
    od, oh, ow = out
    xp = x.reshape(n, c, d, h * w).permute(0, 2, 1, 3)
    if padding[0]:
        xp = F.pad(xp, (0, 0, 0, 0, padding[0], padding[0]))
    sd, dd = stride[0], dilation[0]
    planes = [xp[:, k * dd:k * dd + sd * (od - 1) + 1:sd].reshape(n, od, groups, cg * h * w)
              for k in range(kd)]
    s = sh.stack(planes, 3).reshape(n * od, groups * kd * cg, h, w)  # (N, OD, G, KD, Cg*HW)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(oc, kd * cg, kh, kw)
    y = F.conv2d(s, w2, bias, stride[1:], padding[1:], dilation[1:], groups)
    y = y.reshape(n, od, oc, oh * ow).permute(0, 2, 1, 3).contiguous()
    return y.reshape(n, oc, od, oh, ow)
