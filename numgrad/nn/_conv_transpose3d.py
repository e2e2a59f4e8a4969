"""``F.conv_transpose3d``: PyTorch's argument and shape checks, in its order; the transposed
convolution is the op ``numgrad.ops.conv_transpose.conv_transpose3d`` (one 2-D transposed
convolution of every input plane placed along depth, recorded as PyTorch's one
``ConvolutionBackward0`` node)."""

from numgrad.nn import _checks as C
from numgrad.nn import _functional_extra as FX
from numgrad.ops import conv_transpose as CT
from numgrad.ops import shape as sh
from numgrad.ops._util import dtype_of

__all__ = ["conv_transpose3d"]


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution of (N, Cin, D, H, W) or unbatched (Cin, D, H, W) input with
    weight (Cin, Cout/groups, kD, kH, kW)."""
    fn = "conv_transpose3d"
    C.conv_tensors(fn, input, weight, bias)
    if isinstance(padding, str):
        raise TypeError(f"{fn}(): argument 'padding' must be tuple of ints, not str")
    stride, padding, output_padding, dilation = (
        C.int_tuple(fn, name, pos, v, 3)
        for name, pos, v in (("stride", 4, stride), ("padding", 5, padding),
                             ("output_padding", 6, output_padding), ("dilation", 8, dilation)))
    groups = C.int_arg(groups, fn, "groups", 7)
    nd = input._data.ndim
    if nd not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to {fn}, but got "
                           f"input of size: {list(input._data.shape)}")
    unbatched = nd == 4
    x = sh.unsqueeze(input, 0) if unbatched else input
    stride, padding, dilation, output_padding, out = FX._check_conv(
        x._data.shape, weight._data.shape, stride, padding, dilation, groups,
        bias._data.shape if bias is not None else None, True, output_padding)
    for t in (weight, bias):  # the 3-D kernel's own message
        if t is not None and t._data.dtype != x._data.dtype:
            raise RuntimeError(f"expected scalar type {dtype_of(x)._legacy} but found "
                               f"{dtype_of(t)._legacy}")
    FX._check_types(x, weight, bias)
    n, cin, depth, h, w = x._data.shape
    if min(out) < 1 and n * cin * depth * h * w:
        raise RuntimeError(
            f"Given input size per channel: ({depth} x {h} x {w}). Calculated output size per "
            f"channel: ({' x '.join(map(str, out))}). Output size is too small")
    y = CT.conv_transpose3d(x, weight, bias, stride, padding, output_padding, dilation, groups,
                            out)
    return sh.squeeze(y, 0) if unbatched else y

