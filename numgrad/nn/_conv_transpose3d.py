"""``F.conv_transpose3d``: a 3-D transposed convolution as one 2-D transposed convolution
(the conv_transpose2d op, its kernels and its backward) of every input plane, followed by a
placement of its results along depth.

Input plane ``d`` with weight depth ``kd`` lands on output depth ``d * sd + kd * dd - pd``:

    y[n, o, d * sd + kd * dd - pd] += conv_transpose2d(x[n, :, d], W[:, o, kd])

so conv_transpose2d runs once on the (N*D, Cin, H, W) planes with the KD weight depths
folded into its output channels (group by group), and each depth ``kd``'s results are
spread ``sd`` apart (zeros between), shifted by ``kd * dd`` and summed; the padding crops
both ends, of which ``output_padding`` keeps (or adds as zeros) that many at the end. The
gradients come from the ops used (permute, reshape, pad, add, conv_transpose2d), recorded as
PyTorch's one ``ConvolutionBackward0`` node; no kernel of its own. PyTorch's argument and
shape checks, in its order, come first.
"""

from numgrad import _arrays
from numgrad.nn import _functional_extra as FX
from numgrad.nn import functional as F
from numgrad.ops import elementwise as ew
from numgrad.ops import shape as sh
from numgrad.ops._util import _wrap, dtype_of
from numgrad.ops.named_composite import record

__all__ = ["conv_transpose3d"]


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution of (N, Cin, D, H, W) or unbatched (Cin, D, H, W) input with
    weight (Cin, Cout/groups, kD, kH, kW)."""
    fn = "conv_transpose3d"
    FX._conv_tensors(fn, input, weight, bias)
    if isinstance(padding, str):
        raise TypeError(f"{fn}(): argument 'padding' must be tuple of ints, not str")
    stride, padding, output_padding, dilation = (
        FX._conv_ints(fn, name, pos, v) * (3 if F._is_int(v) else 1)
        for name, pos, v in (("stride", 4, stride), ("padding", 5, padding),
                             ("output_padding", 6, output_padding), ("dilation", 8, dilation)))
    groups = F._int_arg(groups, fn, "groups", 7)
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
    _, cg, kd, kh, kw = weight._data.shape
    oc = cg * groups
    if min(out) < 1 and n * cin * depth * h * w:
        raise RuntimeError(
            f"Given input size per channel: ({depth} x {h} x {w}). Calculated output size per "
            f"channel: ({' x '.join(map(str, out))}). Output size is too small")

    def forward(x, weight, bias):
        if x._data.size == 0 or weight._data.size == 0:
            y = _wrap(_arrays.zeros(x._data, (n, oc) + out, x._data.dtype))
            return ew.add(ew.mul(y, 0), sh.reshape(bias, (1, oc, 1, 1, 1))) \
                if bias is not None else y
        return _by_planes(x, weight, bias, stride, padding, output_padding, dilation, groups,
                          out)

    y = record("ConvolutionBackward0", forward, (x, weight, bias), (x, weight),
               ("input", "weight"))
    return sh.squeeze(y, 0) if unbatched else y


def _by_planes(x, weight, bias, stride, padding, output_padding, dilation, groups, out):
    n, cin, depth, h, w = x._data.shape
    _, cg, kd, kh, kw = weight._data.shape
    od, oh, ow = out
    sd, pd, dd, opd = stride[0], padding[0], dilation[0], output_padding[0]
    planes = sh.reshape(sh.permute(x, (0, 2, 1, 3, 4)), (n * depth, cin, h, w))
    # output channels (group, kd, c) so that each group's KD depths stay inside the group
    w2 = sh.reshape(sh.permute(weight, (0, 2, 1, 3, 4)), (cin, kd * cg, kh, kw))
    y2 = F.conv_transpose2d(planes, w2, None, stride[1:], padding[1:], output_padding[1:],
                            groups, dilation[1:])
    ph, pw = oh, ow
    y2 = sh.reshape(y2, (n, depth, groups, kd, cg, ph * pw))
    full = (depth - 1) * sd + 1  # the spread planes of one kernel depth
    total = None
    for k in range(kd):
        t = sh.reshape(y2[:, :, :, k], (n, depth, 1, groups * cg * ph * pw))
        if sd > 1:  # sd - 1 zero planes after each plane, the last ones cut
            t = F.pad(t, (0, 0, 0, sd - 1))
            t = sh.reshape(t, (n, depth * sd, groups * cg * ph * pw))[:, :full]
        else:
            t = sh.reshape(t, (n, depth, groups * cg * ph * pw))
        # shifted by k * dd, then padding cropped at both ends and output_padding appended
        left = k * dd - pd
        right = (kd - 1 - k) * dd - pd + opd
        t = F.pad(t, (0, 0, left, right))
        total = t if total is None else ew.add(total, t)
    y = sh.reshape(total, (n, od, groups * cg, ph, pw))
    y = sh.permute(y, (0, 2, 1, 3, 4))
    if bias is not None:
        return ew.add(y, sh.reshape(bias, (1, groups * cg, 1, 1, 1)))
    return y.contiguous()
