"""2-D pooling as declared ops, in PyTorch's structure: ``max_pool2d_with_indices``
(``MaxPool2DWithIndicesBackward0``) whose derivative is ``max_pool2d_with_indices_backward``
(each window's gradient routed to its argmax), and ``avg_pool2d`` (``AvgPool2DBackward0``)
whose derivative is ``avg_pool2d_backward`` (each window's gradient spread over it). Both
backward ops are linear in the gradient: the derivative of the max scatter is a gather of
the same indices (numgrad's ``gather``), that of the average spread is ``avg_pool2d`` again.
The window kernels are ``numgrad.kernels.windows`` (one source for CPU and CUDA);
``numgrad.nn.functional`` checks the arguments and computes the geometry, a tuple
(kh, kw, sh, sw, ph, pw, dh, dw, oh, ow) for max pooling and
(kh, kw, sh, sw, ph, pw, count_include_pad, divisor, oh, ow) for average pooling, over
(N, C, H, W) input."""

import numpy as np

from numgrad import _arrays as A
from numgrad.kernels import LazyKernels
from numgrad.ops import indexing as ix
from numgrad.ops import shape as sh
from numgrad.ops._util import _wrap
from numgrad.ops.registry import op

NN = LazyKernels("nn")
_F = ("functional",)


# d/dg scatter(g, idx) = gather(a, idx): each output reads the element its window chose
def _max_scatter_grad(grad, indices):
    n, c = indices.shape[:2]
    flat = sh.reshape(grad, (n, c, -1))
    picked = ix.gather(flat, 2, _wrap(indices.reshape(n, c, -1)))
    return sh.reshape(picked, indices.shape)


@op(node="MaxPool2DWithIndicesBackwardBackward0", inputs=("grad_output",), variants=(),
    grads={"grad_output": _max_scatter_grad})
def max_pool2d_with_indices_backward(grad_output, indices, self_sym_sizes):
    """Zeros of the input's shape plus each window's gradient at its argmax."""
    g = grad_output._data
    gx = A.empty(g, self_sym_sizes, g.dtype)
    K = NN.on(gx)
    K.pick(K.max_pool2d_bwd, K.max_pool2d_bwd_par, gx.size)(A.contiguous(g), indices, gx)
    return gx, {"indices": indices}


# d/dx max_pool(x) = g routed to the argmax of each window
def _max_pool_grad(grad, indices, self_sym_sizes):
    return max_pool2d_with_indices_backward(grad, indices, self_sym_sizes)


@op(node="MaxPool2DWithIndicesBackward0", variants=_F, save=("indices", "self_sym_sizes"),
    grads={"self": _max_pool_grad})
def max_pool2d_with_indices(input, geometry):
    """Window maxima of nonempty-plane (N, C, H, W) input and their flat indices per plane."""
    x = input._data
    kh, kw, sh_, sw, ph, pw, dh, dw, oh, ow = geometry
    n, c = x.shape[:2]
    out = A.empty(x, (n, c, oh, ow), x.dtype)
    idx = A.empty(x, (n, c, oh, ow), np.int64)
    if out.size:
        K = NN.on(x)
        K.pick(K.max_pool2d, K.max_pool2d_par, x.size)(
            A.contiguous(x), kh, kw, sh_, sw, ph, pw, dh, dw, out, idx)
    return (out, idx), {"indices": idx, "self_sym_sizes": x.shape}


# d/dg spread(g) = avg_pool(a): the two are adjoint
def _avg_spread_grad(grad, geometry):
    return avg_pool2d(grad, geometry)


@op(node="AvgPool2DBackwardBackward0", inputs=("grad_output",), variants=(),
    grads={"grad_output": _avg_spread_grad})
def avg_pool2d_backward(grad_output, geometry, self_sym_sizes):
    """Each window's gradient over its divisor, added over the window."""
    kh, kw, sh_, sw, ph, pw, include, divisor, _, _ = geometry
    g = grad_output._data
    gx = A.empty(g, self_sym_sizes, g.dtype)
    K = NN.on(gx)
    K.pick(K.avg_pool2d_bwd, K.avg_pool2d_bwd_par, gx.size)(
        A.contiguous(g), kh, kw, sh_, sw, ph, pw, include, divisor, gx)
    return gx, {"geometry": geometry}


# d/dx avg_pool(x) = each window's g / divisor spread over the window
def _avg_pool_grad(grad, geometry, self_sym_sizes):
    return avg_pool2d_backward(grad, geometry, self_sym_sizes)


@op(node="AvgPool2DBackward0", variants=_F, grads={"self": _avg_pool_grad})
def avg_pool2d(input, geometry):
    """Window means of (N, C, H, W) input (a positive divisor, or 0 for the window's)."""
    x = input._data
    kh, kw, sh_, sw, ph, pw, include, divisor, oh, ow = geometry
    n, c = x.shape[:2]
    out = A.empty(x, (n, c, oh, ow), x.dtype)
    K = NN.on(x)
    K.pick(K.avg_pool2d, K.avg_pool2d_par, x.size)(
        A.contiguous(x), kh, kw, sh_, sw, ph, pw, include, divisor, out)
    return out, {"geometry": geometry, "self_sym_sizes": x.shape}


# these nodes save only sizes: they may run again without retain_graph (PyTorch's)
avg_pool2d.opdef.node._meta_only = True
avg_pool2d_backward.opdef.node._meta_only = True
