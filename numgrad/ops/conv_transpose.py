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


def _functional():
    from numgrad.nn import functional as F  # conv2d, unfold and the im2col helpers
    return F


def _as_2d(t, unit):
    return sh.unsqueeze(t, 2) if unit else t


def _from_2d(t, unit):
    return sh.squeeze(t, 2) if unit else t


# y = col2im(W^T x) is the adjoint of conv2d: dx = conv2d(g, W)
def _input_grad(grad, weight, geo, unit):
    F = _functional()
    g, w = _as_2d(grad, unit), _as_2d(weight, unit)
    gx = F.conv2d(g, w, None, (geo.sh, geo.sw), (geo.ph, geo.pw), (geo.dh, geo.dw), geo.groups)
    return _from_2d(gx, unit)


# dW_g = x_g cols(g)_g^T summed over the batch (per group)
def _weight_grad(grad, input, weight, geo, unit):
    F = _functional()
    g, x, w = _as_2d(grad, unit), _as_2d(input, unit), _as_2d(weight, unit)
    n, cin = x._data.shape[:2]
    cols = F.unfold(g, (geo.kh, geo.kw), (geo.dh, geo.dw), (geo.ph, geo.pw), (geo.sh, geo.sw))
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
