"""Convolution as declared ops, in PyTorch's structure: ``convolution`` (``ConvolutionBackward0``)
whose derivative is the pair of ops ``convolution_backward_input`` and
``convolution_backward_weight`` (``ConvolutionBackwardBackward0``), each linear in both of its
tensors, so that every derivative of theirs is one of these three ops again; and ``im2col``
(``Im2ColBackward0``, ``F.unfold``) and ``col2im`` (``Col2ImBackward0``, ``F.fold``), each the
other's derivative.

The arrays: a CPU float32/float64 stride-1 convolution runs the loop over the batch of
``numgrad.kernels.cpu.conv`` (BLAS per sample, forward and both gradients in one pass);
any other runs the general path, columns of the whole batch (``im2col``, the kernels of
``numgrad.kernels.<device>.nn``) times the weight, one GEMM per group. 1-D convolutions
(``unit``) run as 2-D ones of unit height. ``numgrad.nn.functional`` checks the arguments and
builds the geometry (``ConvGeom``).
"""

import numpy as np

from numgrad import _arrays as A
from numgrad.kernels import LazyKernels
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, LIN, RED, _wrap, state
from numgrad.ops.registry import op

NN = LazyKernels("nn")
CONV = LazyKernels("conv")
_F = ("functional",)

# columns up to this size are kept from the forward pass for the weight gradient (saves
# one im2col per convolution in backward; larger ones are rebuilt to bound memory)
KEEP_COLUMNS_BYTES = 64 << 20


class ConvGeom:
    """A checked 2-D geometry: every size the im2col/col2im kernels index by, and the shapes
    of the (4-D) input image and weight."""

    __slots__ = ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "groups", "oh", "ow",
                 "in_shape", "w_shape")

    def args(self):
        return (self.kh, self.kw, self.sh, self.sw, self.ph, self.pw, self.dh, self.dw,
                self.oh, self.ow)

    def windows(self):
        """(kernel_size, dilation, padding, stride) as F.unfold takes them."""
        return (self.kh, self.kw), (self.dh, self.dw), (self.ph, self.pw), (self.sh, self.sw)


def make_geom(in_shape, w_shape, k, s, p, d, groups, out):
    geo = ConvGeom()
    (geo.kh, geo.kw), (geo.sh, geo.sw), (geo.ph, geo.pw) = k, s, p
    (geo.dh, geo.dw), (geo.oh, geo.ow) = d, out
    geo.groups = groups
    geo.in_shape = tuple(in_shape)
    geo.w_shape = tuple(w_shape)
    return geo


def blocks(size, k, s, p, d):
    """Sliding windows along one dim (floor division, as PyTorch's div_rtn)."""
    return (size + 2 * p - (d * (k - 1) + 1)) // s + 1


def group_slices(total, groups):
    step = total // groups
    return [slice(i * step, (i + 1) * step) for i in range(groups)]


# ----------------------------------------------------------------------------------------
# arrays
# ----------------------------------------------------------------------------------------


def im2col_array(x, geo):
    """Columns of x laid out (N, C*kh*kw, L) (the layout of ``unfold``)."""
    n, c = x.shape[0], x.shape[1]
    cols = A.empty(x, (n, c * geo.kh * geo.kw, geo.oh * geo.ow), x.dtype)
    NN.im2col(A.contiguous(x), *geo.args(), cols)
    return cols


def _im2col_kmajor(x, geo):
    """Columns of x laid out (C*kh*kw, N*L), so a whole batch is one GEMM."""
    n, c = x.shape[0], x.shape[1]
    k = c * geo.kh * geo.kw
    cols = A.empty(x, (k, n, geo.oh * geo.ow), x.dtype)
    NN.im2col(A.contiguous(x), *geo.args(), cols.transpose(1, 0, 2))
    return cols.reshape(k, -1)


def col2im_array(cols, geo, shape):
    """The adjoint of im2col from (N, K, L) columns (any strides)."""
    x = A.empty(cols, shape, cols.dtype)
    NN.col2im(cols, *geo.args(), x)
    return x


def keep_columns(cols):
    """Whether the forward's columns are worth keeping for the weight gradient."""
    return cols is not None and cols.nbytes <= KEEP_COLUMNS_BYTES


def batch_loop(x, geo):
    """Whether the stride-1 loop over the batch (``kernels/cpu/conv.py``) runs this
    convolution: CPU float32/float64 data, where NumPy's OpenBLAS can be called from it."""
    return geo.sh == 1 and geo.sw == 1 and x.__class__ is np.ndarray and CONV.AVAILABLE \
        and x.dtype in CONV.DTYPES


def forward_arrays(x, w, bias, geo):
    """(N, OC, L) of nonempty 4-D x and w, and the columns to keep for backward (None:
    backward makes them)."""
    if batch_loop(x, geo):
        n, oc = x.shape[0], w.shape[0]
        out = A.empty(x, (n, oc, geo.oh * geo.ow), x.dtype)
        w2 = A.contiguous(w).reshape(oc, -1)
        has_bias = bias is not None
        CONV.forward(A.contiguous(x), w2, bias if has_bias else w2[0], has_bias, geo.groups,
                     geo.kh, geo.kw, geo.ph, geo.pw, geo.dh, geo.dw, geo.oh, geo.ow, out)
        return out, None
    return _forward_columns(x, w, bias, geo)


def _forward_columns(x, w, bias, geo):
    """The general path: one GEMM per group over the whole batch's columns, then bias and
    layout in one pass; returns the result and the columns."""
    n = x.shape[0]
    oc = w.shape[0]
    cols = _im2col_kmajor(x, geo)
    out2 = A.empty(x, (oc, cols.shape[1]), x.dtype)
    w2 = w.reshape(oc, -1)
    if geo.groups == 1:
        LIN.matmul(w2, cols, out2)
    else:
        for go, gk in zip(group_slices(oc, geo.groups), group_slices(cols.shape[0], geo.groups)):
            LIN.matmul(w2[go], cols[gk], out2[go])
    src = out2.reshape(oc, n, -1).transpose(1, 0, 2)
    out = A.empty(x, (n, oc, src.shape[2]), x.dtype)
    if bias is None:
        EW.unary(EW.copy, src, out.dtype, out=out)
    else:
        EW.binary(EW.add, src, A.astype(bias.reshape(1, oc, 1), out.dtype), out.dtype,
                  out.shape, out=out)
    return out, cols


# conv(x, W) = W cols(x) per sample: dW = sum_n G_n cols_n^T, dx_n = col2im(W^T G_n),
# db = sum G
def backward_arrays(g, x, w, geo, cols, need_x, need_w, need_b):
    """(dx, dW, db) arrays (None where not needed) of the convolution of 4-D ``x`` (only its
    shape is read when ``need_w`` is false) and ``w`` for the gradient ``g`` (N, OC, ...)."""
    if cols is None and batch_loop(x, geo):
        xd = A.contiguous(x)
        n, oc = xd.shape[0], w.shape[0]
        gy = A.contiguous(g).reshape(n, oc, -1)
        w2 = A.contiguous(w).reshape(oc, -1)
        gx = A.empty(xd, xd.shape if need_x else (0, 0, 0, 0), xd.dtype)
        gw = A.empty(w2, w2.shape if need_w else (0, 0), w2.dtype)
        CONV.backward(xd, w2, gy, geo.groups, geo.kh, geo.kw, geo.ph, geo.pw, geo.dh, geo.dw,
                      geo.oh, geo.ow, need_x, need_w, gx, gw)
        gb = RED.sum_dims(gy, (0, 2), gy.dtype, 1.0).reshape(oc) if need_b else None
        return (gx if need_x else None, gw.reshape(w.shape) if need_w else None, gb)
    n, oc = g.shape[0], g.shape[1]
    # the gradient as (OC, N*L), the layout of the forward GEMM's output
    g2 = A.empty(g, (oc, n, geo.oh * geo.ow), g.dtype)
    EW.unary(EW.copy, g.reshape(n, oc, -1).transpose(1, 0, 2), g2.dtype, out=g2)
    g2 = g2.reshape(oc, -1)
    gx = gw = gb = None
    if need_b:
        gb = RED.sum_dims(g2, (1,), g2.dtype, 1.0).reshape(oc)
    k = geo.in_shape[1] * geo.kh * geo.kw
    slices_o = group_slices(oc, geo.groups)
    slices_k = group_slices(k, geo.groups)
    w2 = w.reshape(oc, -1)
    if need_w:
        if cols is None:
            cols = _im2col_kmajor(x, geo)
        gw2 = A.empty(g2, w2.shape, g2.dtype)
        for go, gk in zip(slices_o, slices_k):
            LIN.matmul(g2[go], cols[gk].T, gw2[go])
        gw = gw2.reshape(w.shape)
    if need_x:
        gcols = A.empty(g2, (k, g2.shape[1]), g2.dtype)
        for go, gk in zip(slices_o, slices_k):
            LIN.matmul(w2[go].T, g2[go], gcols[gk])
        gx = col2im_array(gcols.reshape(k, n, -1).transpose(1, 0, 2), geo, geo.in_shape)
    return gx, gw, gb


def _image(t, unit):
    """A (N, C, L) array as the (N, C, 1, L) image of a 1-D convolution."""
    return t[:, :, None, :] if unit else t


# ----------------------------------------------------------------------------------------
# the derivatives' ops: dx and dW, each linear in both of its tensors
# ----------------------------------------------------------------------------------------


# dx = B_x(g, W) is the adjoint of x -> conv(x, W): d/dg <a, B_x(g, W)> = conv(a, W)
def _bx_grad_out(grad, weight, geometry, unit):
    return convolution(grad, weight, None, geometry, unit)


# <a, B_x(g, W)> = <conv(a, W), g> = <W, B_w(g, a)>: d/dW = B_w(g, a)
def _bx_weight(grad, grad_output, geometry, unit):
    return convolution_backward_weight(grad_output, grad, geometry, unit, None)


@op(node="ConvolutionBackwardBackward0", inputs=("grad_output", "weight"), variants=(),
    grads={"grad_output": _bx_grad_out, "weight": _bx_weight})
def convolution_backward_input(grad_output, weight, geometry, unit):
    """The input's gradient of a convolution: col2im(W^T G)."""
    g, w = _image(grad_output._data, unit), _image(weight._data, unit)
    shape = geometry.in_shape
    gx = backward_arrays(g, A.empty(g, shape, g.dtype), w, geometry, None, True, False,
                         False)[0]
    return (gx.reshape(shape[:2] + shape[3:]) if unit else gx), {"geometry": geometry,
                                                                 "unit": unit}


# dW = B_w(g, x) = sum G cols(x)^T is the adjoint of W -> conv(x, W): d/dg = conv(x, a)
def _bw_grad_out(grad, input, geometry, unit):
    return convolution(input, grad, None, geometry, unit)


# <a, B_w(g, x)> = <conv(x, a), g> = <x, B_x(g, a)>: d/dx = B_x(g, a)
def _bw_input(grad, grad_output, geometry, unit):
    return convolution_backward_input(grad_output, grad, geometry, unit)


@op(node="ConvolutionBackwardBackward0", inputs=("grad_output", "input"), variants=(),
    grads={"grad_output": _bw_grad_out, "input": _bw_input})
def convolution_backward_weight(grad_output, input, geometry, unit, cols):
    """The weight's gradient of a convolution: sum over the batch of G cols(x)^T (``cols``:
    the forward's columns, or None)."""
    g, x = _image(grad_output._data, unit), _image(input._data, unit)
    shape = geometry.w_shape
    gw = backward_arrays(g, x, A.empty(x, shape, x.dtype), geometry, cols, False, True,
                         False)[1]
    return (gw.reshape(shape[:2] + shape[3:]) if unit else gw), {"geometry": geometry,
                                                                 "unit": unit}


# ----------------------------------------------------------------------------------------
# the convolution
# ----------------------------------------------------------------------------------------


def _zeros_like(t):
    return _wrap(A.zeros(t._data, t._data.shape, t._data.dtype))


# conv(x, W) + b: dx = B_x(g, W), dW = B_w(g, x), db = sum of g over batch and space; an
# empty input, weight or output gives the bias alone: dx = 0, dW = 0
def _convolution_grads(grad, input, weight, geometry, cols, unit, bias_sym_sizes_opt,
                       output_mask):
    need_x, need_w, need_b = output_mask
    if input._data.size == 0 or weight._data.size == 0 or grad._data.size == 0:
        gb = None
        if need_b:  # (an input of no channels has no output channel: zeros)
            gb = red.sum(grad, (0,) + tuple(range(2, grad._data.ndim))) \
                if grad._data.shape[1] == bias_sym_sizes_opt[0] else \
                _wrap(A.zeros(grad._data, bias_sym_sizes_opt, grad._data.dtype))
        return (_zeros_like(input) if need_x else None,
                _zeros_like(weight) if need_w else None, gb)
    if state.enabled:  # create_graph: the ops, differentiable again
        gb = None
        if need_b:
            n, oc = grad._data.shape[:2]
            gb = red.sum(sh.reshape(grad, (n, oc, -1)), (0, 2))
        return (convolution_backward_input(grad, weight, geometry, unit) if need_x else None,
                convolution_backward_weight(grad, input, geometry, unit, cols)
                if need_w else None, gb)
    x, w = input._data, weight._data
    gx, gw, gb = backward_arrays(_image(grad._data, unit), _image(x, unit), _image(w, unit),
                                 geometry, cols, need_x, need_w, need_b)
    return (None if gx is None else _wrap(gx.reshape(x.shape)),
            None if gw is None else _wrap(gw.reshape(w.shape)),
            None if gb is None else _wrap(gb))


@op(node="ConvolutionBackward0", inputs=("input", "weight", "bias"), variants=_F,
    save=("input", "weight", "geometry", "cols", "unit", "bias_sym_sizes_opt"),
    grads={("input", "weight", "bias"): _convolution_grads})
def convolution(input, weight, bias, geometry, unit=False, empty_shape=None):
    """The convolution of (N, C, H, W) ``input`` (``unit``: (N, C, L), as height 1) with
    weight (OC, C/groups, kh, kw), plus ``bias``, for the geometry the caller checked. An
    empty input, weight or output (of any convolution, transposed ones too) gives the bias
    over ``empty_shape``, which the caller computes."""
    x, w = input._data, weight._data
    b = None if bias is None else bias._data
    values = {"geometry": geometry, "cols": None, "unit": unit,
              "bias_sym_sizes_opt": None if b is None else b.shape}
    if empty_shape is not None:
        arr = A.zeros(x, empty_shape, x.dtype)
        if b is not None and empty_shape[1]:
            EW.binary(EW.add, arr, A.astype(b.reshape((1, -1) + (1,) * (arr.ndim - 2)),
                                            arr.dtype), arr.dtype, arr.shape, out=arr)
        return arr, values
    x, w = _image(x, unit), _image(w, unit)
    geo = geometry
    n, oc = x.shape[0], w.shape[0]
    out, cols = forward_arrays(x, w, b, geo)
    if state.enabled and weight._requires_grad and keep_columns(cols):
        values["cols"] = cols
    return out.reshape((n, oc, geo.ow) if unit else (n, oc, geo.oh, geo.ow)), values


# ----------------------------------------------------------------------------------------
# im2col and col2im (F.unfold, F.fold): adjoint linear maps
# ----------------------------------------------------------------------------------------


# d/dx im2col(x) = col2im(g)
def _im2col_grad(grad, geometry):
    return col2im(grad, geometry)


@op(node="Im2ColBackward0", variants=_F, grads={"self": _im2col_grad})
def im2col(input, geometry):
    """The (N, C*kh*kw, L) columns of a (N, C, H, W) image, or the (C*kh*kw, L) ones of a
    (C, H, W) one (F.unfold)."""
    x = input._data
    if x.ndim == 3:
        return im2col_array(x[None], geometry)[0], {"geometry": geometry}
    return im2col_array(x, geometry), {"geometry": geometry}


# d/dcols col2im(cols) = im2col(g)
def _col2im_grad(grad, geometry):
    return im2col(grad, geometry)


@op(node="Col2ImBackward0", variants=_F, grads={"self": _col2im_grad})
def col2im(input, geometry):
    """(N, C*kh*kw, L) columns summed into the (N, C, H, W) image ``geometry.in_shape``, or
    (C*kh*kw, L) ones into its (C, H, W) plane (N = 1) (F.fold)."""
    cols = A.contiguous(input._data)
    if cols.ndim == 2:
        return col2im_array(cols[None], geometry, geometry.in_shape)[0], {"geometry": geometry}
    return col2im_array(cols, geometry, geometry.in_shape), {"geometry": geometry}


# their nodes save only the geometry: they may run again without retain_graph (PyTorch's)
im2col.opdef.node._meta_only = True
col2im.opdef.node._meta_only = True


# ----------------------------------------------------------------------------------------
# 3-D convolution: one 2-D convolution over the depth windows (a named composite)
# ----------------------------------------------------------------------------------------


def conv2d_checked(x, weight, bias, stride, padding, dilation, groups, out):
    """The ``convolution`` op on a 4-D input for a geometry already checked (``out`` the
    output's (H, W)); an empty input or weight gives the bias over the output shape."""
    xs, ws = x._data.shape, weight._data.shape
    geo = make_geom(xs, ws, ws[2:], stride, padding, dilation, groups, out)
    empty = None
    if not (x._data.size and weight._data.size):
        empty = (xs[0], ws[0] if xs[1] else 0) + tuple(out)
    return convolution(x, weight, bias, geo, False, empty)


def conv3d(input, weight, bias, stride, padding, dilation, groups, out):
    """The 3-D convolution of a checked (N, C, D, H, W) ``input`` (symmetric ``padding``,
    output sizes ``out``) as PyTorch's one ``ConvolutionBackward0`` node over the composite
    ``_conv3d_by_conv2d``, whose ops give the gradients."""
    from numgrad.ops.named_composite import record
    return record("ConvolutionBackward0",
                  lambda x, w, b: _conv3d_by_conv2d(x, w, b, stride, padding, dilation, groups,
                                                    out),
                  (input, weight, bias), (input, weight), ("input", "weight"))


# y[n, o, od] = sum_{kd, c} conv2d(x[n, c, od * sd + kd * dd], W[o, c, kd]): the KD depth
# planes of every output depth stacked beside the channels, group by group, so that one
# conv2d with the weight laid out (OC, KD * C/groups, KH, KW) sums over them
def _conv3d_by_conv2d(x, weight, bias, stride, padding, dilation, groups, out):
    from numgrad.ops import pad as pad_op
    # laid out (N, D, C, H*W) first, so that each depth window is a strided slice and the
    # stacked windows land in conv2d's channel order; everything stays 4-D/5-D (kernels the
    # other convolutions and layers compile too)
    n, c, d, h, w = x._data.shape
    oc, cg, kd, kh, kw = weight._data.shape
    od, oh, ow = out
    xp = sh.permute(sh.reshape(x, (n, c, d, h * w)), (0, 2, 1, 3))
    if padding[0]:
        xp = pad_op.constant_pad_nd(xp, (0, 0, 0, 0, padding[0], padding[0]), 0.0)
    sd, dd = stride[0], dilation[0]
    planes = [sh.reshape(xp[:, k * dd:k * dd + sd * (od - 1) + 1:sd], (n, od, groups, cg * h * w))
              for k in range(kd)]
    s = sh.reshape(sh.stack(planes, 3), (n * od, groups * kd * cg, h, w))  # (N, OD, G, KD, .)
    w2 = sh.reshape(sh.permute(weight, (0, 2, 1, 3, 4)), (oc, kd * cg, kh, kw))
    y = conv2d_checked(s, w2, bias, stride[1:], padding[1:], dilation[1:], groups, (oh, ow))
    y = sh.permute(sh.reshape(y, (n, od, oc, oh * ow)), (0, 2, 1, 3)).contiguous()
    return sh.reshape(y, (n, oc, od, oh, ow))
