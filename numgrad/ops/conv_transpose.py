"""Transposed convolution as a declared op: ``_conv_transpose`` (``ConvolutionBackward0``, as
PyTorch's ``convolution`` with ``transposed=True``). The forward is one GEMM per group,
columns = W_g^T x_g over the whole batch, summed into the image by ``col2im`` (the adjoint of
conv2d), then the bias. Its derivatives are numgrad ops (conv2d, unfold, matmul, sum), so
they are differentiable again. 1-D inputs run as 2-D ones of unit height. The argument
checks and the geometry are ``numgrad.nn.functional``'s (``conv_transpose1d``/``2d``).
"""

from numgrad import _arrays as A
from numgrad.ops import conv as CV
from numgrad.ops import linalg as la
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, LIN
from numgrad.ops.registry import op


def _as_2d(t, unit):
    return sh.unsqueeze(t, 2) if unit else t


def _from_2d(t, unit):
    return sh.squeeze(t, 2) if unit else t


def _windows(geo):
    """(kernel, stride, padding, dilation) and the positions (the input's H and W) of the
    windows over the gradient image: a conv2d or unfold of it read at the input's positions
    only (with output_padding >= stride, allowed when the dilation is larger, the image holds
    more windows than the input has positions)."""
    return ((geo.kh, geo.kw), (geo.sh, geo.sw), (geo.ph, geo.pw), (geo.dh, geo.dw),
            (geo.oh, geo.ow))


# y = col2im(W^T x) is the adjoint of conv2d: dx = conv2d(g, W)
def _input_grad(grad, weight, geo, unit):
    g, w = _as_2d(grad, unit), _as_2d(weight, unit)
    _, st, p, d, blocks = _windows(geo)
    gx = CV.conv2d_checked(g, w, None, st, p, d, geo.groups, blocks)
    return _from_2d(gx, unit)


# dW_g = x_g cols(g)_g^T summed over the batch (per group)
def _weight_grad(grad, input, weight, geo, unit):
    g, x, w = _as_2d(grad, unit), _as_2d(input, unit), _as_2d(weight, unit)
    n, cin = x._data.shape[:2]
    k, st, p, d, blocks = _windows(geo)
    cols = CV.im2col(g, CV.make_geom(g._data.shape, (1, g._data.shape[1]) + k, k, st, p, d, 1,
                                     blocks))
    x3 = sh.reshape(x, (n, cin, -1))
    parts = [red.sum(la.matmul(x3[:, gi], sh.transpose(cols[:, gk], 1, 2)), 0)
             for gi, gk in zip(CV.group_slices(cin, geo.groups),
                               CV.group_slices(cols._data.shape[1], geo.groups))]
    gw = sh.reshape(sh.cat(parts, 0) if len(parts) > 1 else parts[0], w._data.shape)
    return _from_2d(gw, unit)


# db = sum g over batch and space
def _bias_grad(grad, unit):
    return red.sum(_as_2d(grad, unit), (0, 2, 3))


@op(node="ConvolutionBackward0", inputs=("input", "weight", "bias"), variants=("functional",),
    save=("input", "weight", "geo", "unit"),
    grads={"input": _input_grad, "weight": _weight_grad, "bias": _bias_grad})
def _conv_transpose(input, weight, bias, geo, unit, out_shape):
    """The transposed convolution of a nonempty (N, Cin, H, W) ``input`` (``unit``: (N, Cin,
    L), as height 1) with weight (Cin, Cout/groups, kh, kw) into ``out_shape`` (4-D), for
    the geometry ``geo`` the caller checked."""
    x, w = input._data, weight._data
    if unit:
        x, w = x[:, :, None, :], w[:, :, None, :]
    n, cin = x.shape[:2]
    k = w.shape[1] * geo.kh * geo.kw * geo.groups
    x2 = A.empty(x, (cin, n, x.shape[2] * x.shape[3]), x.dtype)
    EW.unary(EW.copy, x.reshape(n, cin, -1).transpose(1, 0, 2), x.dtype, out=x2)
    x2 = x2.reshape(cin, -1)
    w2 = w.reshape(cin, -1)
    cols = A.empty(x, (k, x2.shape[1]), x.dtype)
    for gi, gk in zip(CV.group_slices(cin, geo.groups), CV.group_slices(k, geo.groups)):
        LIN.matmul(w2[gi].T, x2[gi], cols[gk])
    out = CV.col2im_array(cols.reshape(k, n, -1).transpose(1, 0, 2), geo, out_shape)
    if bias is not None:
        EW.binary(EW.add, out, bias._data.reshape(1, -1, 1, 1), out.dtype, out.shape, out=out)
    return (out.reshape(out.shape[:2] + out.shape[3:]) if unit else out), {
        "geo": geo, "unit": unit}


# ----------------------------------------------------------------------------------------
# 3-D transposed convolution: one 2-D transposed convolution of every input plane, placed
# along depth (a named composite)
# ----------------------------------------------------------------------------------------


def conv_transpose3d(x, weight, bias, stride, padding, output_padding, dilation, groups, out):
    """The transposed convolution of a checked (N, Cin, D, H, W) ``x`` with weight
    (Cin, Cout/groups, kD, kH, kW) into output sizes ``out``, as PyTorch's one
    ``ConvolutionBackward0`` node over the composite ``_conv_transpose3d_by_planes``."""
    from numgrad import _arrays
    from numgrad.ops import elementwise as ew
    from numgrad.ops._util import _wrap
    from numgrad.ops.named_composite import record
    n = x._data.shape[0]
    oc = weight._data.shape[1] * groups

    def forward(x, weight, bias):
        if x._data.size == 0 or weight._data.size == 0:
            y = _wrap(_arrays.zeros(x._data, (n, oc) + out, x._data.dtype))
            return ew.add(ew.mul(y, 0), sh.reshape(bias, (1, oc, 1, 1, 1))) \
                if bias is not None else y
        return _conv_transpose3d_by_planes(x, weight, bias, stride, padding, output_padding,
                                           dilation, groups, out)

    return record("ConvolutionBackward0", forward, (x, weight, bias), (x, weight),
                  ("input", "weight"))


# y[n, o, d * sd + kd * dd - pd] += conv_transpose2d(x[n, :, d], W[:, o, kd]): one 2-D
# transposed convolution of the (N*D, Cin, H, W) planes with the KD weight depths folded
# into its output channels (group by group); each depth kd's results spread sd apart,
# shifted by kd * dd and summed, the padding cropped and output_padding appended
def _conv_transpose3d_by_planes(x, weight, bias, stride, padding, output_padding, dilation,
                                groups, out):
    from numgrad.ops import elementwise as ew
    from numgrad.ops.pad import constant_pad_nd
    n, cin, depth, h, w = x._data.shape
    _, cg, kd, kh, kw = weight._data.shape
    od, oh, ow = out
    sd, pd, dd, opd = stride[0], padding[0], dilation[0], output_padding[0]
    planes = sh.reshape(sh.permute(x, (0, 2, 1, 3, 4)), (n * depth, cin, h, w))
    # output channels (group, kd, c) so that each group's KD depths stay inside the group
    w2 = sh.reshape(sh.permute(weight, (0, 2, 1, 3, 4)), (cin, kd * cg, kh, kw))
    geo = CV.make_geom((n * depth, kd * cg * groups, oh, ow), w2._data.shape, (kh, kw),
                       stride[1:], padding[1:], dilation[1:], groups, (h, w))
    y2 = _conv_transpose(planes, w2, None, geo, False, (n * depth, kd * cg * groups, oh, ow))
    y2 = sh.reshape(y2, (n, depth, groups, kd, cg, oh * ow))
    full = (depth - 1) * sd + 1  # the spread planes of one kernel depth
    total = None
    for k in range(kd):
        t = sh.reshape(y2[:, :, :, k], (n, depth, 1, groups * cg * oh * ow))
        if sd > 1:  # sd - 1 zero planes after each plane, the last ones cut
            t = constant_pad_nd(t, (0, 0, 0, sd - 1), 0.0)
            t = sh.reshape(t, (n, depth * sd, groups * cg * oh * ow))[:, :full]
        else:
            t = sh.reshape(t, (n, depth, groups * cg * oh * ow))
        # shifted by k * dd, then padding cropped at both ends and output_padding appended
        left = k * dd - pd
        right = (kd - 1 - k) * dd - pd + opd
        t = constant_pad_nd(t, (0, 0, left, right), 0.0)
        total = t if total is None else ew.add(total, t)
    y = sh.permute(sh.reshape(total, (n, od, groups * cg, oh, ow)), (0, 2, 1, 3, 4))
    if bias is not None:
        return ew.add(y, sh.reshape(bias, (1, groups * cg, 1, 1, 1)))
    return y.contiguous()
