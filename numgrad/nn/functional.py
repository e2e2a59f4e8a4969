"""``numgrad.nn.functional``: the layers and losses as functions, with PyTorch's node names.

Forward passes run Numba kernels (convolutions as BLAS products over im2col columns).
Backward rules run kernels too; when a graph is being recorded for higher-order gradients
(``create_graph=True``), the same rules are written with differentiable numgrad ops.
"""

import math
import warnings

import numpy as np

from numgrad import _arrays as A
from numgrad import _dtype
from numgrad._shape import Size
from numgrad.autograd.graph import Node
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops import linalg as la
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import (
    EW,
    LIN,
    NO_EDGE,
    RED,
    LazyKernels,
    _wrap,
    attach,
    dtype_of,
    edge,
    meta_for,
    state,
)

NN = LazyKernels("nn")

# activations that exist as tensor ops
relu = ew.relu
tanh = ew.tanh
sigmoid = ew.sigmoid
softmax = red.softmax
log_softmax = red.log_softmax


def _needs(node, i):
    return node.next_functions[i][0] is not None


def _composite_grads(node, forward, inputs, g):
    """Gradients from re-running ``forward`` (a composite of numgrad ops) under autograd: used
    by fused ops when create_graph=True needs gradients that can be differentiated again."""
    from numgrad.autograd import grad
    diff = [(i, t) for i, t in enumerate(inputs)
            if t is not None and _needs(node, i) and t.requires_grad]
    out = [None] * len(inputs)
    if diff:
        y = forward(*inputs)
        gs = grad(y, [t for _, t in diff], g, create_graph=True, allow_unused=True)
        for (i, _), gi in zip(diff, gs):
            out[i] = gi
    return tuple(out)


# ========================================================================================
# linear
# ========================================================================================


class AddmmBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("mat1", "mat2", "alpha", "beta")

    # d/dbias = beta g, d/dmat1 = alpha g mat2^T, d/dmat2 = alpha mat1^T g
    def _backward(self, g):
        m1, m2, alpha, beta, m2_column_major = self._saved
        gs = g if alpha == 1 else ew.mul(g, alpha)
        return (g if beta == 1 else ew.mul(g, beta),
                la.mm(gs, sh.t(m2)) if _needs(self, 1) else None,
                la.mat2_grad(m1, gs, m2_column_major) if _needs(self, 2) else None)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2) in one op (``AddmmBackward0``)."""
    with_graph = state.enabled and (input._requires_grad or mat1._requires_grad
                                    or mat2._requires_grad)
    if mat1._data.ndim != 2 or mat2._data.ndim != 2:
        raise RuntimeError("mat1 must be a matrix, got " + str(mat1._data.ndim) + "-D tensor")
    (n, k), (k2, m) = mat1._data.shape, mat2._data.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    la._check_dtypes(mat1, mat2)
    out_arr = A.empty(mat1._data, (n, m), mat1._data.dtype)
    LIN.matmul(mat1._data, mat2._data, out_arr)
    if alpha != 1:
        EW.unary(EW.mul_s, out_arr, out_arr.dtype, alpha, out=out_arr)
    bias = input._data
    if beta != 1:
        bias = EW.unary(EW.mul_s, bias, bias.dtype, beta)
    EW.binary(EW.add, out_arr, bias.astype(out_arr.dtype, copy=False), out_arr.dtype,
              (n, m), out=out_arr)
    out = _wrap(out_arr)
    if with_graph:
        node = AddmmBackward0((edge(input), edge(mat1), edge(mat2)),
                              (mat1 if mat2._requires_grad else None,
                               mat2 if mat1._requires_grad else None, alpha, beta,
                               mat2._requires_grad and la.column_major(mat2)))
        m_in = meta_for(input, (n, m), dtype_of(mat1))
        if m_in is not None:
            node._meta = (m_in, None, None)
        attach(out, node)
    return out


def linear(input, weight, bias=None):
    """input @ weight^T + bias (``AddmmBackward0`` for 2-D input, as in PyTorch)."""
    if input._data.ndim == 2 and bias is not None:
        return addmm(bias, input, sh.t(weight))
    if input._data.ndim > 2 and bias is not None:
        # PyTorch folds the leading dims into one addmm and views the result back
        lead = input._data.shape[:-1]
        out = addmm(bias, sh.reshape(input, (-1, input._data.shape[-1])), sh.t(weight))
        return sh.view(out, lead + (out._data.shape[-1],))
    out = la.matmul(input, sh.t(weight))
    return out if bias is None else ew.add(out, bias)


# ========================================================================================
# convolution
# ========================================================================================


def _pair(v, name="value"):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"expected a pair for {name}, got {v}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


class _ConvGeom:
    __slots__ = ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "groups", "oh", "ow",
                 "in_shape", "w_shape")

    def args(self):
        return (self.kh, self.kw, self.sh, self.sw, self.ph, self.pw, self.dh, self.dw,
                self.oh, self.ow)


def _conv_geom(x_shape, w_shape, stride, padding, dilation, groups):
    geo = _ConvGeom()
    n, c, h, w = x_shape
    oc, cg, kh, kw = w_shape
    geo.kh, geo.kw = kh, kw
    geo.sh, geo.sw = _pair(stride, "stride")
    geo.dh, geo.dw = _pair(dilation, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            geo.ph = geo.pw = 0
        elif padding == "same":
            if (geo.sh, geo.sw) != (1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions")
            geo.ph, geo.pw = geo.dh * (kh - 1) // 2, geo.dw * (kw - 1) // 2
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of "
                             "{'valid', 'same'}")
    else:
        geo.ph, geo.pw = _pair(padding, "padding")
    geo.groups = groups
    if c != cg * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(w_shape)}, expected input"
            f"{list(x_shape)} to have {cg * groups} channels, but got {c} channels instead")
    if oc % groups:
        raise RuntimeError("out_channels must be divisible by groups")
    eh = geo.dh * (kh - 1) + 1
    ew_ = geo.dw * (kw - 1) + 1
    if h + 2 * geo.ph < eh or w + 2 * geo.pw < ew_:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({h + 2 * geo.ph} x {w + 2 * geo.pw}). "
            f"Kernel size: ({eh} x {ew_}). Kernel size can't be greater than actual input size")
    geo.oh = (h + 2 * geo.ph - eh) // geo.sh + 1
    geo.ow = (w + 2 * geo.pw - ew_) // geo.sw + 1
    geo.in_shape = tuple(x_shape)
    geo.w_shape = tuple(w_shape)
    return geo


def _im2col(x, geo):
    """Columns of x laid out (N, C*kh*kw, L) (the layout of ``unfold``)."""
    n, c = x.shape[0], x.shape[1]
    cols = A.empty(x, (n, c * geo.kh * geo.kw, geo.oh * geo.ow), x.dtype)
    K = NN.on(x)
    K.pick(K.im2col, K.im2col_par, cols.size)(A.contiguous(x), *geo.args(), cols)
    return cols


def _im2col_kmajor(x, geo):
    """Columns of x laid out (C*kh*kw, N*L), so a whole batch is one GEMM."""
    n, c = x.shape[0], x.shape[1]
    k = c * geo.kh * geo.kw
    cols = A.empty(x, (k, n, geo.oh * geo.ow), x.dtype)
    K = NN.on(x)
    K.pick(K.im2col, K.im2col_par, cols.size)(
        A.contiguous(x), *geo.args(), cols.transpose(1, 0, 2))
    return cols.reshape(k, -1)


def _col2im(cols, geo, shape):
    """The adjoint of im2col from (N, K, L) columns (any strides)."""
    x = A.empty(cols, shape, cols.dtype)
    K = NN.on(cols)
    K.pick(K.col2im, K.col2im_par, cols.size)(cols, *geo.args(), x)
    return x


def _group_slices(total, groups):
    step = total // groups
    return [slice(i * step, (i + 1) * step) for i in range(groups)]


# columns up to this size are kept from the forward pass for the weight gradient (saves
# one im2col per convolution in backward; larger ones are rebuilt to bound memory)
KEEP_COLUMNS_BYTES = 64 << 20


def _conv_forward(x, w, bias, geo):
    """(N, OC, L) and the columns: one GEMM per group over the whole batch, then bias and
    layout in one pass."""
    n = x.shape[0]
    oc = w.shape[0]
    cols = _im2col_kmajor(x, geo)
    out2 = A.empty(x, (oc, cols.shape[1]), x.dtype)
    w2 = w.reshape(oc, -1)
    if geo.groups == 1:
        LIN.matmul(w2, cols, out2)
    else:
        for go, gk in zip(_group_slices(oc, geo.groups), _group_slices(cols.shape[0], geo.groups)):
            LIN.matmul(w2[go], cols[gk], out2[go])
    src = out2.reshape(oc, n, -1).transpose(1, 0, 2)
    out = A.empty(x, (n, oc, src.shape[2]), x.dtype)
    if bias is None:
        EW.unary(EW.copy, src, out.dtype, out=out)
    else:
        EW.binary(EW.add, src, bias.reshape(1, oc, 1).astype(out.dtype, copy=False), out.dtype,
                  out.shape, out=out)
    return out, cols


class ConvolutionBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("input", "weight", "geometry")

    # conv(x, W) = W cols(x): dW = G cols(x)^T, dx = col2im(W^T G), db = sum G
    def _backward(self, g):
        x, w, geo, cols = self._saved
        if state.enabled:  # create_graph: the same rule in differentiable ops
            return _conv_backward_ops(g, x, w, geo, self)
        n, oc = g._data.shape[0], g._data.shape[1]
        # the gradient as (OC, N*L), the layout of the forward GEMM's output
        g2 = A.empty(g._data, (oc, n, geo.oh * geo.ow), g._data.dtype)
        EW.unary(EW.copy, g._data.reshape(n, oc, -1).transpose(1, 0, 2), g2.dtype, out=g2)
        g2 = g2.reshape(oc, -1)
        gx = gw = gb = None
        if _needs(self, 2):
            gb = _wrap(RED.sum_dims(g2, (1,), g2.dtype, 1.0).reshape(oc))
        k = geo.in_shape[1] * geo.kh * geo.kw
        slices_o = _group_slices(oc, geo.groups)
        slices_k = _group_slices(k, geo.groups)
        w2 = w._data.reshape(oc, -1)
        if _needs(self, 1):
            if cols is None:
                cols = _im2col_kmajor(x._data, geo)
            gw2 = A.empty(g2, w2.shape, g2.dtype)
            for go, gk in zip(slices_o, slices_k):
                LIN.matmul(g2[go], cols[gk].T, gw2[go])
            gw = _wrap(gw2.reshape(w._data.shape))
        if _needs(self, 0):
            gcols = A.empty(g2, (k, g2.shape[1]), g2.dtype)
            for go, gk in zip(slices_o, slices_k):
                LIN.matmul(w2[go].T, g2[go], gcols[gk])
            gcols3 = gcols.reshape(k, n, -1).transpose(1, 0, 2)
            gx = _wrap(_col2im(gcols3, geo, geo.in_shape))
        return (gx, gw, gb)


def _conv_backward_ops(g, x, w, geo, node):
    """The convolution rule with unfold/fold and matmul ops (all differentiable)."""
    n, oc = g._data.shape[0], g._data.shape[1]
    g3 = sh.reshape(g, (n, oc, -1))
    gx = gw = gb = None
    if _needs(node, 2):
        gb = red.sum(g3, (0, 2))
    k = geo.in_shape[1] * geo.kh * geo.kw
    slices_o = _group_slices(oc, geo.groups)
    slices_k = _group_slices(k, geo.groups)
    if _needs(node, 1):
        cols = unfold(x, (geo.kh, geo.kw), (geo.dh, geo.dw), (geo.ph, geo.pw), (geo.sh, geo.sw))
        parts = [red.sum(la.matmul(g3[:, go], sh.transpose(cols[:, gk], 1, 2)), 0)
                 for go, gk in zip(slices_o, slices_k)]
        gw = sh.reshape(sh.cat(parts, 0), w._data.shape)
    if _needs(node, 0):
        w2 = sh.reshape(w, (oc, -1))
        parts = [la.matmul(sh.t(w2[go]), g3[:, go]) for go in slices_o]
        gcols = sh.cat(parts, 1) if len(parts) > 1 else parts[0]
        gx = fold(gcols, geo.in_shape[2:], (geo.kh, geo.kw), (geo.dh, geo.dw), (geo.ph, geo.pw),
                  (geo.sh, geo.sw))
    return (gx, gw, gb)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (``ConvolutionBackward0``); im2col + BLAS."""
    unbatched = input._data.ndim == 3
    if unbatched:
        input = sh.unsqueeze(input, 0)
    if input._data.ndim != 4:
        raise RuntimeError(
            f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
            f"{list(input._data.shape)}")
    if input._data.dtype != weight._data.dtype:
        raise RuntimeError(
            f"Input type ({dtype_of(input)._legacy}) and weight type ({dtype_of(weight)._legacy})"
            " should be the same")
    geo = _conv_geom(input._data.shape, weight._data.shape, stride, padding, dilation, groups)
    out_arr, cols = _conv_forward(input._data, weight._data,
                                  bias._data if bias is not None else None, geo)
    out = _wrap(out_arr.reshape(out_arr.shape[0], out_arr.shape[1], geo.oh, geo.ow))
    reqs = (input, weight) + ((bias,) if bias is not None else ())
    if state.enabled and any(t._requires_grad for t in reqs):
        keep = weight._requires_grad and cols.nbytes <= KEEP_COLUMNS_BYTES
        node = ConvolutionBackward0((edge(input), edge(weight),
                                     edge(bias) if bias is not None else NO_EDGE),
                                    (input, weight, geo, cols if keep else None))
        attach(out, node)
    return sh.squeeze(out, 0) if unbatched else out


class Im2ColBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx unfold(x) = fold(g)
    def _backward(self, g):
        geo = self._saved[0]
        return (fold(g, geo.in_shape[2:], (geo.kh, geo.kw), (geo.dh, geo.dw), (geo.ph, geo.pw),
                     (geo.sh, geo.sw)),)


class Col2ImBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dcols fold(cols) = unfold(g)
    def _backward(self, g):
        geo = self._saved[0]
        return (unfold(g, (geo.kh, geo.kw), (geo.dh, geo.dw), (geo.ph, geo.pw),
                       (geo.sh, geo.sw)),)


def _unfold_geom(shape, kernel_size, dilation, padding, stride):
    kh, kw = _pair(kernel_size)
    return _conv_geom(shape, (1, shape[1], kh, kw), stride, padding, dilation, 1)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks as columns: (N, C*kh*kw, L) (``Im2ColBackward0``)."""
    geo = _unfold_geom(input._data.shape, kernel_size, dilation, padding, stride)
    out = _wrap(_im2col(input._data, geo))
    if state.enabled and input._requires_grad:
        attach(out, Im2ColBackward0((edge(input),), (geo,)))
    return out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns back into an image (the adjoint of unfold, ``Col2ImBackward0``)."""
    kh, kw = _pair(kernel_size)
    n, k, _ = input._data.shape
    c = k // (kh * kw)
    oh, ow = _pair(output_size)
    geo = _conv_geom((n, c, oh, ow), (1, c, kh, kw), stride, padding, dilation, 1)
    out = _wrap(_col2im(A.contiguous(input._data), geo, (n, c, oh, ow)))
    if state.enabled and input._requires_grad:
        attach(out, Col2ImBackward0((edge(input),), (geo,)))
    return out


class ConstantPadNdBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx pad(x) = the unpadded region of g
    def _backward(self, g):
        key = self._saved[0]
        return (sh._take(g, key),)


def pad(input, pad, mode="constant", value=0.0):
    """Constant padding of the last len(pad)/2 dims (``ConstantPadNdBackward0``)."""
    if mode != "constant":
        raise NotImplementedError(f"pad mode '{mode}' is not supported by numgrad")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    shape = list(input._data.shape)
    key = [slice(None)] * len(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo < 0 or hi < 0:
            raise NotImplementedError("negative padding is not supported by numgrad")
        key[d] = slice(lo, lo + shape[d])
        shape[d] += lo + hi
    out_arr = A.full(input._data, shape, value, input._data.dtype)
    EW.unary(EW.copy, input._data, out_arr.dtype, out=out_arr[tuple(key)])
    out = _wrap(out_arr)
    if state.enabled and input._requires_grad:
        attach(out, ConstantPadNdBackward0((edge(input),), (tuple(key),)))
    return out


# ========================================================================================
# pooling
# ========================================================================================


def _pool_size(h, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    if ceil_mode:
        o = -(-(h + 2 * p - eff) // s) + 1
        if (o - 1) * s >= h + p:
            o -= 1
    else:
        o = (h + 2 * p - eff) // s + 1
    return o


def _pool_geom(x, kernel_size, stride, padding, dilation, ceil_mode):
    kh, kw = _pair(kernel_size, "kernel_size")
    sh_, sw = _pair(stride if stride is not None and stride != [] else (kh, kw), "stride")
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
    if ph > (dh * (kh - 1) + 1) // 2 or pw > (dw * (kw - 1) + 1) // 2:
        raise RuntimeError(
            f"pad should be at most half of effective kernel size, but got pad={ph}, "
            f"kernel_size={kh} and dilation={dh}")
    h, w = x._data.shape[-2:]
    oh = _pool_size(h, kh, sh_, ph, dh, ceil_mode)
    ow = _pool_size(w, kw, sw, pw, dw, ceil_mode)
    if oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"Given input size: ({x._data.shape[-3]}x{h}x{w}). Calculated output size: "
            f"({x._data.shape[-3]}x{oh}x{ow}). Output size is too small")
    return kh, kw, sh_, sw, ph, pw, dh, dw, oh, ow


class MaxPool2DWithIndicesBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("indices", "self_sym_sizes")

    # d/dx max_pool(x) = g routed to the argmax of each window
    def _backward(self, g):
        idx, shape = self._saved
        return (_max_pool_scatter(g, idx, shape),)


class MaxPoolScatterBackward(Node):
    __slots__ = ()

    # d/dg scatter(g, idx) = gather(gg, idx)
    def _backward(self, gg):
        idx = self._saved[0]
        out = A.empty(idx, idx.shape, gg._data.dtype)
        NN.on(idx).max_pool2d_gather(A.contiguous(gg._data), idx, out)
        return (_wrap(out),)


def _max_pool_scatter(g, idx, shape):
    gx = A.empty(g._data, shape, g._data.dtype)
    K = NN.on(gx)
    K.pick(K.max_pool2d_bwd, K.max_pool2d_bwd_par, gx.size)(A.contiguous(g._data), idx, gx)
    out = _wrap(gx)
    if state.enabled and g._requires_grad:
        attach(out, MaxPoolScatterBackward((edge(g),), (idx,)))
    return out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    unbatched = input._data.ndim == 3
    x = sh.unsqueeze(input, 0) if unbatched else input
    kh, kw, sh_, sw, ph, pw, dh, dw, oh, ow = _pool_geom(x, kernel_size, stride, padding,
                                                         dilation, ceil_mode)
    n, c = x._data.shape[:2]
    out_arr = A.empty(x._data, (n, c, oh, ow), x._data.dtype)
    idx = A.empty(x._data, (n, c, oh, ow), np.int64)
    K = NN.on(x._data)
    K.pick(K.max_pool2d, K.max_pool2d_par, x._data.size)(
        A.contiguous(x._data), kh, kw, sh_, sw, ph, pw, dh, dw, out_arr, idx)
    out = _wrap(out_arr)
    if state.enabled and x._requires_grad:
        attach(out, MaxPool2DWithIndicesBackward0((edge(x),), (idx, x._data.shape)))
    if unbatched:
        out = sh.squeeze(out, 0)
        idx = idx[0]
    return (out, _wrap(idx)) if return_indices else out


class AvgPool2DBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx avg_pool(x) = each window's g / divisor spread over the window
    def _backward(self, g):
        geo, shape = self._saved
        return (_avg_pool_spread(g, geo, shape),)


class AvgPoolSpreadBackward(Node):
    __slots__ = ()
    _meta_only = True

    # d/dg spread(g) = avg_pool(gg) (the two are adjoint)
    def _backward(self, gg):
        geo = self._saved[0]
        return (_avg_pool_apply(gg, geo),)


def _avg_pool_apply(x, geo):
    kh, kw, sh_, sw, ph, pw, include, divisor, oh, ow = geo
    n, c = x._data.shape[:2]
    out_arr = A.empty(x._data, (n, c, oh, ow), x._data.dtype)
    K = NN.on(x._data)
    K.pick(K.avg_pool2d, K.avg_pool2d_par, x._data.size)(
        A.contiguous(x._data), kh, kw, sh_, sw, ph, pw, include, divisor, out_arr)
    out = _wrap(out_arr)
    if state.enabled and x._requires_grad:
        attach(out, AvgPool2DBackward0((edge(x),), (geo, x._data.shape)))
    return out


def _avg_pool_spread(g, geo, shape):
    kh, kw, sh_, sw, ph, pw, include, divisor, _, _ = geo
    gx = A.empty(g._data, shape, g._data.dtype)
    K = NN.on(gx)
    K.pick(K.avg_pool2d_bwd, K.avg_pool2d_bwd_par, gx.size)(
        A.contiguous(g._data), kh, kw, sh_, sw, ph, pw, include, divisor, gx)
    out = _wrap(gx)
    if state.enabled and g._requires_grad:
        attach(out, AvgPoolSpreadBackward((edge(g),), (geo,)))
    return out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    unbatched = input._data.ndim == 3
    x = sh.unsqueeze(input, 0) if unbatched else input
    kh, kw, sh_, sw, ph, pw, _, _, oh, ow = _pool_geom(x, kernel_size, stride, padding, 1,
                                                       ceil_mode)
    geo = (kh, kw, sh_, sw, ph, pw, bool(count_include_pad), int(divisor_override or 0), oh, ow)
    out = _avg_pool_apply(x, geo)
    return sh.squeeze(out, 0) if unbatched else out


def adaptive_avg_pool2d(input, output_size):
    oh, ow = _pair(output_size)
    h, w = input._data.shape[-2:]
    if h % oh or w % ow:
        raise NotImplementedError("adaptive_avg_pool2d needs the input size to be a multiple "
                                  "of the output size in numgrad")
    return avg_pool2d(input, (h // oh, w // ow))


# ========================================================================================
# dropout
# ========================================================================================


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale by 1/(1-p) (``MulBackward0``)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    from numgrad.random import default_generator
    if p == 1:
        mask = A.zeros(input._data, input._data.shape, input._data.dtype)
    else:
        # drawn by the (host) generator: the same masks on every device for one seed
        mask = default_generator.bernoulli(input._data.shape, 1.0 - p, input._data.dtype)
        mask = A.to_device(mask, input.device)
        EW.unary(EW.mul_s, mask, mask.dtype, 1.0 / (1.0 - p), out=mask)
    if inplace:
        return input.mul_(_wrap(mask))
    return ew.mul(input, _wrap(mask))


# ========================================================================================
# normalization
# ========================================================================================


class NativeBatchNormBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("input", "weight", "save_mean", "save_invstd", "training")

    # train: dx = gamma invstd / M (M g - sum g - xhat sum g xhat); dgamma = sum g xhat;
    # dbeta = sum g (sums over batch and space, per channel); eval: dx = gamma invstd g
    def _backward(self, g):
        x, gamma, mean, invstd, training, beta, eps = self._saved
        if state.enabled:
            if training:
                return _composite_grads(self, lambda a, b, c: _batch_norm_ops(a, b, c, eps),
                                        (x, gamma, beta), g)
            return _batch_norm_backward_ops(g, x, gamma, mean, invstd, training, self)
        n, c = x._data.shape[:2]
        x3 = A.contiguous(x._data).reshape(n, c, -1)
        g3 = A.contiguous(g._data).reshape(n, c, -1)
        sum_g = A.empty(x3, c, np.float64)
        sum_gxhat = A.empty(x3, c, np.float64)
        K = NN.on(x3)
        K.batch_norm_bwd_sums(g3, x3, mean, invstd, sum_g, sum_gxhat)
        gx = None
        if _needs(self, 0):
            gam = gamma._data if gamma is not None else A.ones(x3, c, x3.dtype)
            gx_arr = A.empty(x3, x3.shape, x3.dtype)
            K.pick(K.batch_norm_bwd_input, K.batch_norm_bwd_input_par, x3.size)(
                g3, x3, mean, invstd, gam, sum_g, sum_gxhat, training, gx_arr)
            gx = _wrap(gx_arr.reshape(x._data.shape))
        gg = _wrap(sum_gxhat.astype(x3.dtype)) if _needs(self, 1) else None
        gb = _wrap(sum_g.astype(x3.dtype)) if _needs(self, 2) else None
        return (gx, gg, gb)


def _channel_view(t, ndim):
    return sh.reshape(t, (1, -1) + (1,) * (ndim - 2))


def _batch_norm_ops(x, gamma, beta, eps):
    """Training-mode batch norm written with numgrad ops (for higher-order gradients)."""
    nd = x._data.ndim
    dims = (0,) + tuple(range(2, nd))
    mu = red.mean(x, dims, keepdim=True)
    d = ew.sub(x, mu)
    var = red.mean(ew.mul(d, d), dims, keepdim=True)
    y = ew.mul(d, ew.pow(ew.add(var, eps), -0.5))
    if gamma is not None:
        y = ew.mul(y, _channel_view(gamma, nd))
    if beta is not None:
        y = ew.add(y, _channel_view(beta, nd))
    return y


def _batch_norm_backward_ops(g, x, gamma, mean, invstd, training, node):
    nd = x._data.ndim
    dims = (0,) + tuple(range(2, nd))
    mu = _channel_view(_wrap(mean.astype(x._data.dtype)), nd)
    inv = _channel_view(_wrap(invstd.astype(x._data.dtype)), nd)
    xhat = ew.mul(ew.sub(x, mu), inv)
    m = x._data.size // x._data.shape[1]
    gam = _channel_view(gamma, nd) if gamma is not None else 1.0
    sum_g = red.sum(g, dims, keepdim=True)
    sum_gx = red.sum(ew.mul(g, xhat), dims, keepdim=True)
    if training:
        inner = ew.sub(ew.sub(g, ew.div(sum_g, m)), ew.mul(xhat, ew.div(sum_gx, m)))
        gx = ew.mul(ew.mul(inner, inv), gam)
    else:
        gx = ew.mul(ew.mul(g, inv), gam)
    return (gx if _needs(node, 0) else None,
            red.sum(ew.mul(g, xhat), dims) if _needs(node, 1) else None,
            red.sum(g, dims) if _needs(node, 2) else None)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Batch normalization over (N, C, ...) per channel (``NativeBatchNormBackward0``)."""
    x = input._data
    if x.ndim < 2:
        raise ValueError(f"expected 2D or more input (got {x.ndim}D input)")
    n, c = x.shape[:2]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t._data.size != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t._data.size}")
    x3 = A.contiguous(x).reshape(n, c, -1)
    K = NN.on(x)
    if training:
        if x3.shape[0] * x3.shape[2] <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {Size(x.shape)}")
        mean = A.empty(x, c, np.float64)
        var = A.empty(x, c, np.float64)
        invstd = A.empty(x, c, np.float64)
        K.channel_stats(x3, float(eps), mean, var, invstd)
        if running_mean is not None:
            m = x3.shape[0] * x3.shape[2]
            K.running_update(running_mean._data, mean, float(momentum), 1.0)
            K.running_update(running_var._data, var, float(momentum), m / (m - 1))
            running_mean._bump_version()
            running_var._bump_version()
    else:
        mean = running_mean._data.astype(np.float64)
        invstd = A.empty(x, c, np.float64)
        K.inv_std(running_var._data, float(eps), invstd)
    gam = weight._data if weight is not None else A.ones(x, c, x.dtype)
    bet = bias._data if bias is not None else A.zeros(x, c, x.dtype)
    out_arr = A.empty(x, x3.shape, x.dtype)
    K.pick(K.batch_norm_apply, K.batch_norm_apply_par, x3.size)(
        x3, mean, invstd, gam.astype(x.dtype, copy=False), bet.astype(x.dtype, copy=False),
        out_arr)
    out = _wrap(out_arr.reshape(x.shape))
    parts = (input, weight, bias)
    if state.enabled and any(t is not None and t._requires_grad for t in parts):
        node = NativeBatchNormBackward0(
            tuple(edge(t) if t is not None else NO_EDGE for t in parts),
            (input, weight, mean, invstd, bool(training), bias, float(eps)))
        attach(out, node)
    return out


class NativeLayerNormBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("input", "weight", "mean", "rstd", "normalized_shape")

    # dx = rstd (g gamma - mean(g gamma) - xhat mean(g gamma xhat)) per row;
    # dgamma = sum_rows g xhat, dbeta = sum_rows g
    def _backward(self, g):
        x, gamma, mean, rstd, k, beta, eps = self._saved
        if state.enabled:
            return _composite_grads(self, lambda a, b, c: _layer_norm_ops(a, b, c, k, eps),
                                    (x, gamma, beta), g)
        x2 = A.contiguous(x._data).reshape(-1, k)
        g2 = A.contiguous(g._data).reshape(-1, k)
        gam = gamma._data.reshape(-1) if gamma is not None else A.ones(x2, k, x2.dtype)
        K = NN.on(x2)
        gx = gg = gb = None
        if _needs(self, 0):
            gx_arr = A.empty(x2, x2.shape, x2.dtype)
            K.pick(K.layer_norm_bwd_input, K.layer_norm_bwd_input_par, x2.size)(
                g2, x2, mean, rstd, gam, gx_arr)
            gx = _wrap(gx_arr.reshape(x._data.shape))
        if _needs(self, 1) or _needs(self, 2):
            ggam = A.empty(x2, k, np.float64)
            gbet = A.empty(x2, k, np.float64)
            K.layer_norm_bwd_params(g2, x2, mean, rstd, ggam, gbet)
            shape = gamma._data.shape if gamma is not None else (k,)
            gg = _wrap(ggam.astype(x2.dtype).reshape(shape)) if _needs(self, 1) else None
            gb = _wrap(gbet.astype(x2.dtype).reshape(shape)) if _needs(self, 2) else None
        return (gx, gg, gb)


def _layer_norm_ops(x, gamma, beta, k, eps):
    """Layer norm written with numgrad ops (for higher-order gradients)."""
    shape = x._data.shape
    x2 = sh.reshape(x, (-1, k))
    mu = red.mean(x2, 1, keepdim=True)
    d = ew.sub(x2, mu)
    var = red.mean(ew.mul(d, d), 1, keepdim=True)
    y = ew.mul(d, ew.pow(ew.add(var, eps), -0.5))
    if gamma is not None:
        y = ew.mul(y, sh.reshape(gamma, (1, k)))
    if beta is not None:
        y = ew.add(y, sh.reshape(beta, (1, k)))
    return sh.reshape(y, shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalize over the trailing ``normalized_shape`` dims (``NativeLayerNormBackward0``)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    x = input._data
    if x.shape[x.ndim - len(normalized_shape):] != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
            f"{list(x.shape)}")
    k = int(np.prod(normalized_shape, dtype=np.int64))
    x2 = A.contiguous(x).reshape(-1, k)
    gam = weight._data.reshape(-1) if weight is not None else A.ones(x, k, x.dtype)
    bet = bias._data.reshape(-1) if bias is not None else A.zeros(x, k, x.dtype)
    out_arr = A.empty(x, x2.shape, x.dtype)
    mean = A.empty(x, x2.shape[0], np.float64)
    rstd = A.empty(x, x2.shape[0], np.float64)
    K = NN.on(x)
    K.pick(K.layer_norm_fwd, K.layer_norm_fwd_par, x2.size)(
        x2, gam.astype(x.dtype, copy=False), bet.astype(x.dtype, copy=False), float(eps),
        out_arr, mean, rstd)
    out = _wrap(out_arr.reshape(x.shape))
    parts = (input, weight, bias)
    if state.enabled and any(t is not None and t._requires_grad for t in parts):
        node = NativeLayerNormBackward0(
            tuple(edge(t) if t is not None else NO_EDGE for t in parts),
            (input, weight, mean, rstd, k, bias, float(eps)))
        attach(out, node)
    return out


# ========================================================================================
# embedding and GELU
# ========================================================================================


class EmbeddingBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("indices", "padding_idx")

    # d/dW embedding(idx, W) = rows of g added at idx (the padding row gets none)
    def _backward(self, g):
        plan, padding_idx = self._saved
        gw = ix._index_scatter(g, plan)
        if padding_idx is not None:
            keep = np.ones((plan.in_shape[0], 1), g._data.dtype)
            keep[padding_idx] = 0
            gw = ew.mul(gw, _wrap(A.to_device(keep, g.device)))
        return (gw,)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at integer ``input`` (``EmbeddingBackward0``)."""
    idx = input._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got torch.{dtype_of(input)._legacy}Tensor instead (while "
            "checking arguments for embedding)")
    n = weight._data.shape[0]
    flat = A.contiguous(idx).reshape(-1).astype(np.int64, copy=False)
    if flat.size and (NN.on(flat).first_outside(flat, 0, n - 1) >= 0):
        raise IndexError("index out of range in self")
    idx = A.host(idx)  # the gather plan is built on the host
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n
    plan = ix._plan(weight._data.shape, [(0, idx)])
    out = _wrap(ix._gather(weight._data, plan))
    if state.enabled and weight._requires_grad:
        attach(out, EmbeddingBackward0((edge(weight),), (plan, padding_idx)))
    return out


class GeluBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "approximate")

    # d/dx gelu(x) = Phi(x) + x phi(x)  (tanh form: 0.5(1 + t) + 0.5 x (1 - t^2) u')
    def _backward(self, g):
        x, approximate = self._saved
        if state.enabled:
            return _composite_grads(self, lambda a: _gelu_ops(a, approximate), (x,), g)
        kernel = EW.gelu_tanh_bwd if approximate == "tanh" else EW.gelu_bwd
        return (_wrap(EW.binary(kernel, g._data, x._data.astype(g._data.dtype, copy=False),
                                g._data.dtype, g._data.shape)),)


def _gelu_ops(x, approximate):
    """GELU written with numgrad ops (for higher-order gradients)."""
    if approximate == "tanh":
        c = math.sqrt(2.0 / math.pi)
        inner = ew.mul(ew.add(x, ew.mul(ew.pow(x, 3), 0.044715)), c)
        return ew.mul(ew.mul(x, 0.5), ew.add(ew.tanh(inner), 1.0))
    cdf = ew.mul(ew.add(_erf(ew.mul(x, 1.0 / math.sqrt(2.0))), 1.0), 0.5)
    return ew.mul(x, cdf)


def _erf(x):
    """erf as an op (``ErfBackward0``), used by the composite GELU."""
    out = _wrap(EW.unary(EW.erf, x._data, x._data.dtype))
    if state.enabled and x._requires_grad:
        attach(out, ErfBackward0((edge(x),), (x,)))
    return out


class ErfBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self",)

    # d/dx erf(x) = 2/sqrt(pi) exp(-x^2)
    def _backward(self, g):
        x = self._saved[0]
        return (ew.mul(g, ew.mul(ew.exp(ew.neg(ew.mul(x, x))), 2.0 / math.sqrt(math.pi))),)


def gelu(input, approximate="none"):
    """x Phi(x) (``GeluBackward0``); ``approximate='tanh'`` uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    dt = dtype_of(input)
    kernel = EW.gelu_tanh if approximate == "tanh" else EW.gelu
    out = _wrap(EW.unary(kernel, input._data, dt.np))
    if state.enabled and input._requires_grad:
        attach(out, GeluBackward0((edge(input),), (input, approximate)))
    return out


def silu(input):
    return ew.mul(input, ew.sigmoid(input))


def leaky_relu(input, negative_slope=0.01):
    return ew.where(ew.gt(input, 0), input, ew.mul(input, negative_slope))


def softplus(input, beta=1.0, threshold=20.0):
    bx = ew.mul(input, beta)
    soft = ew.div(ew.log(ew.add(ew.exp(ew.neg(ew.abs(bx))), 1.0)), beta)
    return ew.where(ew.gt(bx, threshold), input, ew.add(ew.div(ew.relu(bx), beta), soft))


def flatten(input, start_dim=0, end_dim=-1):
    return sh.flatten(input, start_dim, end_dim)


# ========================================================================================
# losses
# ========================================================================================


def _reduce(loss, reduction):
    if reduction == "mean":
        return red.mean(loss)
    if reduction == "sum":
        return red.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_same_size(input, target):
    if input._data.shape != target._data.shape:
        warnings.warn(
            f"Using a target size ({Size(target._data.shape)}) that is different to the input "
            f"size ({Size(input._data.shape)}). This will likely lead to incorrect results due "
            "to broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=3)


class MseLossBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "target", "reduction")

    # d/dx mean((x - t)^2) = 2 (x - t) g / n, d/dt = -that
    def _backward(self, g):
        x, t, reduction, n = self._saved
        d = ew.mul(ew.sub(x, t), 2.0 / n if reduction == "mean" else 2.0)
        gx = ew.mul(d, g)
        return (gx if _needs(self, 0) else None, ew.neg(gx) if _needs(self, 1) else None)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (``MseLossBackward0``)."""
    _check_same_size(input, target)
    dt = _dtype.result_type(input, target)
    shape = np.broadcast_shapes(input._data.shape, target._data.shape)
    el = EW.binary(EW.sqdiff, input._data.astype(dt.np, copy=False),
                   target._data.astype(dt.np, copy=False), dt.np, shape)
    if reduction == "none":
        out = _wrap(el)
    elif reduction in ("mean", "sum"):
        out = _wrap(RED.sum_all(el, dt.np, 1.0 / el.size if reduction == "mean" else 1.0))
    else:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if state.enabled and (input._requires_grad or target._requires_grad):
        node = MseLossBackward0((edge(input), edge(target)), (input, target, reduction, el.size))
        metas = (meta_for(input, shape, dt), meta_for(target, shape, dt))
        if metas != (None, None):
            node._meta = metas
        attach(out, node)
    return out


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_same_size(input, target)
    return _reduce(ew.abs(ew.sub(input, target)), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    d = ew.abs(ew.sub(input, target))
    loss = ew.where(ew.lt(d, beta), ew.div(ew.mul(ew.mul(d, d), 0.5), beta), ew.sub(d, 0.5 * beta))
    return _reduce(loss, reduction)


class NllLossBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("target", "weight", "total_weight", "reduction", "ignore_index")

    # d/dlogp[n, t_n] = -w[t_n] g_n / total_weight (0 elsewhere and for ignored n)
    def _backward(self, g):
        target, weights, total, reduction, shape = self._saved
        if not state.enabled:  # one pass writing the sparse gradient
            out = A.empty(weights, shape, weights.dtype)
            scale = 1.0 / total if reduction == "mean" else 1.0
            NN.on(out).nll_bwd(A.contiguous(g._data).reshape(-1), target, weights, scale, out)
            return (_wrap(out),)
        scale = -1.0 / total if reduction == "mean" else -1.0
        per = ew.mul(g, _wrap(EW.unary(EW.mul_s, weights, weights.dtype, scale)))
        zeros = _wrap(A.zeros(weights, shape, weights.dtype))
        src = sh.unsqueeze(per, 1)
        return (ix.scatter_add(zeros, 1, _wrap(target.reshape(-1, 1)), src),)


def _classes_last(input, target):
    """(N, C) logits and (N,) targets from (N, C, d1, ...) / (N, d1, ...) or (C,) / ()."""
    x = input
    if x._data.ndim == 1:
        return sh.unsqueeze(x, 0), target._data.reshape(1), (), None
    if x._data.ndim > 2:
        perm = (0,) + tuple(range(2, x._data.ndim)) + (1,)
        spatial = tuple(x._data.shape[2:])
        xc = sh.reshape(sh.permute(x, perm), (-1, x._data.shape[1]))
        return xc, target._data.reshape(-1), (x._data.shape[0],) + spatial, perm
    return x, target._data, (x._data.shape[0],), None


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of class indices (``NllLossBackward0``)."""
    if target._data.dtype.kind not in "iu":
        raise RuntimeError(
            f"expected scalar type Long but found {dtype_of(target)._legacy}")
    n_in = input._data.shape[0] if input._data.ndim > 1 else 1
    n_t = target._data.shape[0] if target._data.ndim else 1
    if input._data.ndim > 1 and n_in != n_t:
        raise ValueError(
            f"Expected input batch_size ({n_in}) to match target batch_size ({n_t}).")
    x2, t, out_shape, perm = _classes_last(input, target)
    c = x2._data.shape[1]
    dt = x2._data.dtype
    xd = x2._data
    w = weight._data.astype(dt, copy=False) if weight is not None else A.ones(xd, c, dt)
    t = A.contiguous(t).astype(np.int64, copy=False)
    losses = A.empty(xd, t.shape[0], dt)
    weights = A.empty(xd, t.shape[0], dt)
    bad = NN.on(xd).nll(A.contiguous(xd), t, w, ignore_index, losses, weights)
    if bad >= 0:
        raise IndexError(f"Target {A.host(t)[bad]} is out of bounds.")
    total = A.host(RED.sum_all(weights, weights.dtype, 1.0)).item() if reduction == "mean" \
        else 1.0
    if reduction == "none":
        out_arr = losses.reshape(out_shape) if input._data.ndim > 1 else losses.reshape(())
    elif reduction == "sum":
        out_arr = RED.sum_all(losses, dt, 1.0)
    elif reduction == "mean":
        out_arr = RED.sum_all(losses, dt, 1.0 / total if total else np.nan)
    else:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    out = _wrap(out_arr)
    if state.enabled and x2._requires_grad:
        node = NllLossBackward0((edge(x2),), (t, weights, total, reduction, x2._data.shape))
        attach(out, node)
    return out


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax + nll_loss for class indices; probabilities as targets also work."""
    if input._data.ndim == 0:
        raise RuntimeError("cross_entropy: input must have at least 1 dimension")
    class_dim = 0 if input._data.ndim == 1 else 1
    logp = red.log_softmax(input, class_dim)
    c = input._data.shape[class_dim]
    if target._data.dtype.kind == "f":
        if target._data.shape != input._data.shape:
            raise RuntimeError("expected target dtype to be Long or Byte, but got "
                               f"{dtype_of(target)._legacy}")
        tgt = target
        if label_smoothing > 0:
            tgt = ew.add(ew.mul(target, 1 - label_smoothing), label_smoothing / c)
        prod = ew.mul(logp, tgt)
        if weight is not None:
            prod = ew.mul(prod, _channel_view(weight, input._data.ndim) if input._data.ndim > 1
                          else weight)
        loss = ew.neg(red.sum(prod, class_dim))
        if reduction == "mean":
            return ew.div(red.sum(loss), loss.numel() if input._data.ndim > 1 else 1)
        return _reduce(loss, reduction)
    if target._data.dtype.kind not in "iu":
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {dtype_of(target)._legacy}")
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    ignore = ew.eq(target, ignore_index)
    if weight is not None:
        wv = _channel_view(weight, input._data.ndim) if input._data.ndim > 1 else weight
        smooth = ew.neg(red.sum(ew.mul(logp, wv), class_dim))
    else:
        smooth = ew.neg(red.sum(logp, class_dim))
    smooth = ew.where(ignore, 0.0, smooth)
    if reduction == "mean":
        kept = ew.logical_not(ignore)
        if weight is not None:
            tw = red.sum(ix.getitem(weight, ix.getitem(target, kept)))
            ret = ew.div(red.sum(smooth), tw.item())
        else:
            ret = ew.div(red.sum(smooth), red.sum(kept).item())
    elif reduction == "sum":
        ret = red.sum(smooth)
    else:
        ret = smooth
    return ew.add(ew.mul(nll, 1 - label_smoothing), ew.mul(ret, label_smoothing / c))


class BinaryCrossEntropyBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "target", "weight", "reduction")

    # d/dx bce = (x - t) / max(x (1 - x), 1e-12) * w g / n
    def _backward(self, g):
        x, t, w, reduction, n = self._saved
        denom = ew.clamp_min(ew.mul(x, ew.rsub(x, 1.0)), 1e-12)
        d = ew.div(ew.sub(x, t), denom)
        if w is not None:
            d = ew.mul(d, w)
        if reduction == "mean":
            d = ew.div(d, n)
        return (ew.mul(d, g), None)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), logs clamped at -100 (``BinaryCrossEntropyBackward0``)."""
    if input._data.shape != target._data.shape:
        raise ValueError(
            f"Using a target size ({Size(target._data.shape)}) that is different to the input "
            f"size ({Size(input._data.shape)}) is deprecated. Please ensure they have the same "
            "size.")
    x = input._data
    if x.size and NN.on(x).first_outside(A.contiguous(x).reshape(-1), 0.0, 1.0) >= 0:
        raise RuntimeError("all elements of input should be between 0 and 1")
    el = EW.binary(EW.bce, x, target._data.astype(x.dtype, copy=False), x.dtype, x.shape)
    if weight is not None:
        el = EW.binary(EW.mul, el, weight._data.astype(x.dtype, copy=False), x.dtype, x.shape)
    out = _reduced(el, reduction)
    if state.enabled and input._requires_grad:
        attach(out, BinaryCrossEntropyBackward0((edge(input), edge(target)),
                                                (input, target, weight, reduction, el.size)))
    return out


def _reduced(el, reduction):
    if reduction == "none":
        return _wrap(el)
    if reduction == "sum":
        return _wrap(RED.sum_all(el, el.dtype, 1.0))
    if reduction == "mean":
        return _wrap(RED.sum_all(el, el.dtype, 1.0 / el.size if el.size else np.nan))
    raise ValueError(f"{reduction} is not a valid value for reduction")


class BinaryCrossEntropyWithLogitsBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "target", "weight", "pos_weight", "reduction")

    # d/dx = (1 - t) + lw (sigmoid(x) - 1), lw = (pw - 1) t + 1 (= sigmoid(x) - t without pw)
    def _backward(self, g):
        x, t, w, pw, reduction, n = self._saved
        s = ew.sigmoid(x)
        if pw is None:
            d = ew.sub(s, t)
        else:
            lw = ew.add(ew.mul(ew.sub(pw, 1.0), t), 1.0)
            d = ew.add(ew.rsub(t, 1.0), ew.mul(lw, ew.sub(s, 1.0)))
        if w is not None:
            d = ew.mul(d, w)
        if reduction == "mean":
            d = ew.div(d, n)
        return (ew.mul(d, g), None)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """BCE on logits, stable for any logit (``BinaryCrossEntropyWithLogitsBackward0``)."""
    if input._data.shape != target._data.shape:
        raise ValueError(f"Target size ({Size(target._data.shape)}) must be the same as input "
                         f"size ({Size(input._data.shape)})")
    x = input._data
    t = target._data.astype(x.dtype, copy=False)
    if pos_weight is None:
        el = EW.binary(EW.bce_logits, x, t, x.dtype, x.shape, 1.0)
    else:
        el = EW.ternary(EW.bce_logits_pw, x, t, pos_weight._data.astype(x.dtype, copy=False),
                        x.dtype, x.shape)
    if weight is not None:
        el = EW.binary(EW.mul, el, weight._data.astype(x.dtype, copy=False), x.dtype, x.shape)
    out = _reduced(el, reduction)
    if state.enabled and input._requires_grad:
        attach(out, BinaryCrossEntropyWithLogitsBackward0(
            (edge(input), edge(target)), (input, target, weight, pos_weight, reduction, el.size)))
    return out


def one_hot(tensor, num_classes=-1):
    """Integer class indices as one-hot rows (int64)."""
    n = int(red.amax(tensor).item()) + 1 if num_classes < 0 else num_classes
    idx = sh.unsqueeze(tensor, -1)
    zeros = _wrap(A.zeros(tensor._data, tuple(tensor._data.shape) + (n,), np.int64))
    ones = _wrap(A.ones(tensor._data, idx._data.shape, np.int64))
    return ix.scatter_add(zeros, -1, idx, ones)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    n = red.norm(input, p, dim, keepdim=True)
    return ew.div(input, ew.clamp_min(n, eps))

