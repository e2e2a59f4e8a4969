"""2-D pooling as declared ops, in PyTorch's structure: ``max_pool2d_with_indices``
(``MaxPool2DWithIndicesBackward0``) whose derivative is ``max_pool2d_with_indices_backward``
(each window's gradient routed to its argmax), and ``avg_pool2d`` (``AvgPool2DBackward0``)
whose derivative is ``avg_pool2d_backward`` (each window's gradient spread over it). Both
backward ops are linear in the gradient: the derivative of the max scatter is a gather of
the same indices (numgrad's ``gather``), that of the average spread is ``avg_pool2d`` again.
The window kernels are ``numgrad.kernels.windows`` (one source for CPU and CUDA, each
launcher picking its serial or threaded loop);
``numgrad.nn.functional`` checks the arguments and computes the geometry, a tuple
(kh, kw, sh, sw, ph, pw, dh, dw, oh, ow) for max pooling and
(kh, kw, sh, sw, ph, pw, count_include_pad, divisor, oh, ow) for average pooling, over
(N, C, H, W) input. The 3-D pools (``max_pool3d``, ``avg_pool3d``, the adaptive ones) and max
unpooling are named composites of these ops (one node each, PyTorch's), below."""

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
    lead = indices.shape[:-2]
    flat = sh.reshape(grad, lead + (-1,))
    picked = ix.gather(flat, len(lead), _wrap(indices.reshape(lead + (-1,))))
    return sh.reshape(picked, indices.shape)


def _four_d(a):
    """(N, C, H, W) ``a``, or a (C, H, W) one as a batch of one (a view)."""
    return a.reshape((1,) + a.shape) if a.ndim == 3 else a


@op(node="MaxPool2DWithIndicesBackwardBackward0", inputs=("grad_output",), variants=(),
    grads={"grad_output": _max_scatter_grad})
def max_pool2d_with_indices_backward(grad_output, indices, self_sym_sizes):
    """Zeros of the input's shape plus each window's gradient at its argmax."""
    g = grad_output._data
    gx = A.empty(g, self_sym_sizes, g.dtype)
    NN.max_pool2d_bwd(_four_d(A.contiguous(g)), _four_d(indices), _four_d(gx))
    return gx, {"indices": indices}


# d/dx max_pool(x) = g routed to the argmax of each window
def _max_pool_grad(grad, indices, self_sym_sizes):
    return max_pool2d_with_indices_backward(grad, indices, self_sym_sizes)


@op(node="MaxPool2DWithIndicesBackward0", variants=_F, save=("indices", "self_sym_sizes"),
    grads={"self": _max_pool_grad})
def max_pool2d_with_indices(input, geometry):
    """Window maxima of nonempty-plane (N, C, H, W) or (C, H, W) input and their flat indices
    per plane."""
    x = input._data
    kh, kw, sh_, sw, ph, pw, dh, dw, oh, ow = geometry
    out = A.empty(x, x.shape[:-2] + (oh, ow), x.dtype)
    idx = A.empty(x, x.shape[:-2] + (oh, ow), np.int64)
    if out.size:
        NN.max_pool2d(
            _four_d(A.contiguous(x)), kh, kw, sh_, sw, ph, pw, dh, dw, _four_d(out), _four_d(idx))
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
    NN.avg_pool2d_bwd(
        _four_d(A.contiguous(g)), kh, kw, sh_, sw, ph, pw, include, divisor, _four_d(gx))
    return gx, {"geometry": geometry}


# d/dx avg_pool(x) = each window's g / divisor spread over the window
def _avg_pool_grad(grad, geometry, self_sym_sizes):
    return avg_pool2d_backward(grad, geometry, self_sym_sizes)


@op(node="AvgPool2DBackward0", variants=_F, grads={"self": _avg_pool_grad})
def avg_pool2d(input, geometry):
    """Window means of (N, C, H, W) or (C, H, W) input (a nonzero divisor, or 0 for the
    window's)."""
    x = input._data
    kh, kw, sh_, sw, ph, pw, include, divisor, oh, ow = geometry
    out = A.empty(x, x.shape[:-2] + (oh, ow), x.dtype)
    NN.avg_pool2d(
        _four_d(A.contiguous(x)), kh, kw, sh_, sw, ph, pw, include, divisor, _four_d(out))
    return out, {"geometry": geometry, "self_sym_sizes": x.shape}


# these nodes save only sizes: they may run again without retain_graph (PyTorch's)
avg_pool2d.opdef.node._meta_only = True
avg_pool2d_backward.opdef.node._meta_only = True


# ----------------------------------------------------------------------------------------
# 3-D pooling and max unpooling: named composites of the 2-D ops
# ----------------------------------------------------------------------------------------
# Every 3-D pool is separable: a box's maximum is the maximum over its depth window of the
# (H, W) windows' maxima, a box's mean (PyTorch's divisor, a product of one count per axis)
# the mean over depth of the (H, W) means. So each runs the 2-D op on the (N, C*D, H, W)
# view, then the 2-D op with a (kD, 1) window on the (N, C, D, oH*oW) view, recorded as
# PyTorch's one node. Ties go to the first element in (d, h, w) order, as in PyTorch's
# kernels; the indices are flat positions in D*H*W. ``numgrad.nn.functional`` checks the
# arguments and computes the output sizes.


def _record(name, forward, inputs, saved, names):
    from numgrad.ops.named_composite import record
    return record(name, forward, inputs, saved, names)


def _batched(input):
    return (sh.unsqueeze(input, 0), True) if input._data.ndim == 4 else (input, False)


def _max2d(x, k, s, p, d, out):
    return max_pool2d_with_indices(x, (k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]) + out)


def _avg2d(x, k, s, p, include, divisor, out):
    return avg_pool2d(x, (k[0], k[1], s[0], s[1], p[0], p[1], include, divisor or 0) + out)


def _indices_3d(i1, i2, shape5, ohw):
    """Flat D*H*W positions from the (H, W) stage's indices ``i1`` ((N, C*D, oH, oW), flat in
    H*W) and the depth stage's ``i2`` ((N, C, oD, oH*oW), flat in D*oH*oW)."""
    from numgrad.ops import elementwise as ew
    n, c, depth, h, w = shape5
    t = ew.floor_divide(i2, ohw)  # the depth of each maximum
    hw = ix.gather(sh.reshape(i1, (n, c, depth, ohw)), 2, t)
    return ew.add(ew.mul(t, h * w), hw)


def max_pool3d(input, k, s, p, d, out, return_indices):
    """Window maxima (and flat indices) of checked (N, C, D, H, W) or (C, D, H, W) input with
    output sizes ``out`` (``MaxPool3DWithIndicesBackward0``)."""
    od, oh, ow = out

    def forward(input):
        x, unbatched = _batched(input)
        n, c, depth, h, w = x._data.shape
        y1, i1 = _max2d(sh.reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:], d[1:],
                        (oh, ow))
        y2, i2 = _max2d(sh.reshape(y1, (n, c, depth, oh * ow)), (k[0], 1), (s[0], 1),
                        (p[0], 0), (d[0], 1), (od, oh * ow))
        y = sh.reshape(y2, (n, c, od, oh, ow))
        if unbatched:
            y = sh.squeeze(y, 0)
        if not return_indices:
            return y
        idx = sh.reshape(_indices_3d(i1, i2, (n, c, depth, h, w), oh * ow), (n, c, od, oh, ow))
        return y, sh.squeeze(idx, 0) if unbatched else idx

    return _record("MaxPool3DWithIndicesBackward0", forward, (input,), (input,), ("self",))


def _avg_stages(x, geo, first, second):
    """The (H, W) stage (divisor override ``first``), then the depth stage (``second``)."""
    k, s, p, include, (od, oh, ow) = geo
    n, c, depth, h, w = x._data.shape
    y1 = _avg2d(sh.reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:], include, first,
                (oh, ow))
    y2 = _avg2d(sh.reshape(y1, (n, c, depth, oh * ow)), (k[0], 1), (s[0], 1), (p[0], 0),
                include, second, (od, oh * ow))
    return sh.reshape(y2, (n, c, od, oh, ow))


def _int_avg(x, geo, override):
    """Integer input: each window's exact sum divided once (truncating, as PyTorch's integer
    kernel) by the window's divisor, read off float64 pools of ones (count / mean)."""
    from numgrad.ops import elementwise as ew
    total = _avg_stages(x, geo, 1, 1)
    if override is not None:
        return ew.div(total, override, rounding_mode="trunc")
    ones = _wrap(A.full(x._data, (1, 1) + x._data.shape[2:], 1.0, np.float64))
    count = _avg_stages(ones, geo, 1, 1)
    divisor = ew.div(count, _avg_stages(ones, geo, None, None)).round().to(x.dtype)
    return ew.div(total, divisor, rounding_mode="trunc")


def avg_pool3d(input, k, s, p, count_include_pad, divisor_override, out):
    """Window means of checked (N, C, D, H, W) or (C, D, H, W) input with output sizes
    ``out`` (``AvgPool3DBackward0``)."""
    geo = (k, s, p, count_include_pad, out)

    def forward(input):
        x, unbatched = _batched(input)
        if x._data.dtype.kind in "iu":
            y = _int_avg(x, geo, divisor_override)
        else:
            # with an override, the (H, W) stage sums (divisor 1) and the depth stage divides
            y = _avg_stages(x, geo, None if divisor_override is None else 1, divisor_override)
        return sh.squeeze(y, 0) if unbatched else y

    return _record("AvgPool3DBackward0", forward, (input,), (input,), ("self",))


def _adaptive_2d():
    """The 2-D adaptive pools (kernel or matrices) of ``numgrad.ops.nn_pool`` (which imports
    this module): average, and (maxima, indices)."""
    from numgrad.ops import nn_pool
    return nn_pool.adaptive_avg_pool2d, nn_pool.adaptive_max_pool2d


def adaptive_avg_pool2d(input, size):
    """Means over PyTorch's adaptive windows of checked (N, C, H, W) or (C, H, W) input
    (``AdaptiveAvgPool2DBackward0``, whichever way the windows are computed)."""
    pool2d = _adaptive_2d()[0]
    return _record("AdaptiveAvgPool2DBackward0", lambda x: pool2d(x, size), (input,), (input,),
                   ("self",))


def adaptive_max_pool2d(input, size):
    """(maxima, flat indices) over PyTorch's adaptive windows of checked (N, C, H, W) or
    (C, H, W) input (``AdaptiveMaxPool2DBackward0``)."""
    pool2d = _adaptive_2d()[1]
    return _record("AdaptiveMaxPool2DBackward0", lambda x: pool2d(x, size), (input,), (input,),
                   ("self",))


def adaptive_avg_pool3d(input, size):
    """Means over PyTorch's adaptive windows of checked (N, C, D, H, W) or (C, D, H, W)
    input (``AdaptiveAvgPool3DBackward0``)."""
    pool2d = _adaptive_2d()[0]

    def forward(input):
        x, unbatched = _batched(input)
        n, c, depth, h, w = x._data.shape
        od, oh, ow = size
        if 0 in (n,) + size:  # empty: a (differentiable) empty slice of the input
            y = sh.reshape(x[:, :, :0, :0, :0], (n, c, od, oh, ow))
        else:
            y1 = pool2d(sh.reshape(x, (n, c * depth, h, w)), (oh, ow))
            y2 = pool2d(sh.reshape(y1, (n, c, depth, oh * ow)), (od, oh * ow))
            y = sh.reshape(y2, (n, c, od, oh, ow))
        return sh.squeeze(y, 0) if unbatched else y

    return _record("AdaptiveAvgPool3DBackward0", forward, (input,), (input,), ("self",))


def adaptive_max_pool3d(input, size, return_indices):
    """Maxima (and flat indices) over PyTorch's adaptive windows of checked (N, C, D, H, W)
    or (C, D, H, W) input (``AdaptiveMaxPool3DBackward0``)."""
    pool2d = _adaptive_2d()[1]

    def forward(input):
        x, unbatched = _batched(input)
        n, c, depth, h, w = x._data.shape
        od, oh, ow = size
        out_shape = (n, c, od, oh, ow)
        if 0 in (n,) + size:
            y = sh.reshape(x[:, :, :0, :0, :0], out_shape)
            idx = _wrap(A.zeros(x._data, out_shape, np.int64))
        else:
            y1, i1 = pool2d(sh.reshape(x, (n, c * depth, h, w)), (oh, ow))
            y2, i2 = pool2d(sh.reshape(y1, (n, c, depth, oh * ow)), (od, oh * ow))
            y = sh.reshape(y2, out_shape)
            idx = sh.reshape(_indices_3d(i1, i2, (n, c, depth, h, w), oh * ow), out_shape) \
                if return_indices else None
        if unbatched:
            y = sh.squeeze(y, 0)
            idx = None if idx is None else sh.squeeze(idx, 0)
        return (y, idx) if return_indices else y

    return _record("AdaptiveMaxPool3DBackward0", forward, (input,), (input,), ("self",))


def max_unpool(input, indices, size, nd):
    """The values of checked ``input`` written into zeros of spatial size ``size`` at the
    (checked, in range) flat ``indices`` of each plane: a scatter (whose gradient gathers)
    recorded as PyTorch's ``MaxUnpool{nd}DBackward0``."""
    import math

    from numgrad.ops.scatter import scatter
    x = input._data
    plane = math.prod(size)
    lead = x.shape[:-nd]
    m = math.prod(x.shape[-nd:])

    def forward(input):
        zeros = _wrap(A.zeros(x, lead + (plane,), x.dtype))
        out = scatter(zeros, -1, sh.reshape(indices, lead + (m,)),
                      sh.reshape(input, lead + (m,)))
        return sh.reshape(out, lead + tuple(size))

    return _record(f"MaxUnpool{nd}DBackward0", forward, (input,), (indices,), ("indices",))


# PyTorch's sign(out) * relu(|out|) is out, its gradient 1 except 0 (a select, which drops
# pow's infinite derivative) at an all-zero window: (size * s)^(1/p) for s = out where
# out != 0, else 0
def lp_pool_finish(out, size, norm_type):
    """A power-average pool's result from the average pool ``out`` of x^p over windows of
    ``size`` elements."""
    from numgrad.ops import elementwise as ew
    s = ew.where(ew.ne(out, 0), out, ew.mul(out.detach(), 0))
    return ew.pow(ew.mul(s, size), 1.0 / norm_type)
