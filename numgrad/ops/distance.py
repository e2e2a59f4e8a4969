"""``cdist``: the p-norm distance between each row of x1 and each row of x2, batched, with
PyTorch's two ways of computing it. The direct one (``CdistBackward0``) is a row kernel of
``numgrad.kernels.distance`` on both devices, forward and backward; for p = 2 with more than
25 rows on a side (or ``compute_mode='use_mm_for_euclid_dist'``) PyTorch switches to
sqrt(|a|^2 + |b|^2 - 2 a.b) by one matrix product (``EuclideanDistBackward0``), and so does
numgrad, with numgrad ops. Gradients taken with ``create_graph=True`` are numgrad ops too,
so they can be differentiated again (PyTorch refuses the second derivative of the direct
form)."""

import math

import numpy as np

from numgrad import _arrays
from numgrad._shape import broadcast_shapes
from numgrad.autograd.graph import Node
from numgrad.kernels import LazyKernels
from numgrad.ops._util import Tensor, _wrap, attach, dtype_of, edge, state, wrap_out
from numgrad.ops.registry import declare

DIST = LazyKernels("distance")

_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
          "donot_use_mm_for_euclid_dist": 2}


def _norm_mode(p):
    if p == 0:
        return 0
    if p == 1:
        return 1
    if p == 2:
        return 2
    if p == math.inf:
        return 3
    return 4


def _ops():
    import numgrad
    return numgrad


def _batched(x, batch, rows):
    """``x`` expanded to ``batch`` + its last two dims, as (prod(batch), rows, cols)."""
    ng = _ops()
    shape = tuple(batch) + tuple(x.shape[-2:])
    n = 1
    for b in batch:
        n *= b
    return ng.reshape(x.expand(shape), (n, rows, x.shape[-1]))


def _grad_by_ops(g, x1, x2, dist, p):
    """d/dx1 and d/dx2 of sum(g * cdist(x1, x2)) as numgrad ops ((B, P, M) and (B, R, M)
    inputs, (B, P, R) g and dist): differentiable again."""
    ng = _ops()
    diff = ng.sub(x1.unsqueeze(-2), x2.unsqueeze(-3))  # (B, P, R, M)
    d = dist.unsqueeze(-1)
    gg = g.unsqueeze(-1)
    if p == 0:
        w = ng.mul(diff, 0.0)
    elif p == 1:
        w = ng.mul(ng.sign(diff), gg)
    else:
        zero = ng.eq(d, 0)
        safe = ng.where(zero, 1.0, d)
        if p == 2:
            w = ng.mul(diff, ng.where(zero, 0.0, ng.div(gg, safe)))
        elif p == math.inf:
            w = ng.mul(ng.mul(ng.sign(diff), ng.eq(ng.abs(diff), d)), gg)
        else:
            scale = ng.where(zero, 0.0, ng.div(gg, ng.pow(safe, p - 1)))
            ad = ng.abs(diff)
            if p < 2:
                hole = ng.eq(diff, 0)
                term = ng.mul(ng.sign(diff), ng.pow(ng.where(hole, 1.0, ad), p - 1))
            else:
                term = ng.mul(diff, ng.pow(ad, p - 2))
            w = ng.mul(term, scale)
    return ng.sum(w, -2), ng.neg(ng.sum(w, -3))


class CdistBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("p", "result", "x1", "x2")

    # d/dx1[i,k] ||x1[i] - x2[j]||_p = sign(u) |u|^(p-1) / dist^(p-1), u = x1[i,k] - x2[j,k]
    # (p = 1: sign(u); p = inf: sign(u) where |u| = dist); d/dx2 is its negative, summed over i
    def _backward(self, g):
        p, result, x1, x2, batch = self._saved
        n1, n2 = self.next_functions
        x1b = _batched(x1, batch, x1.shape[-2])
        x2b = _batched(x2, batch, x2.shape[-2])
        shape3 = (x1b.shape[0], x1.shape[-2], x2.shape[-2])
        g3 = _ops().reshape(g, shape3)
        if state.enabled:  # create_graph: a differentiable rule (the result is this node's)
            dist = _ops().reshape(wrap_out(self, result), shape3)
            g1, g2 = _grad_by_ops(g3, x1b, x2b, dist, p)
        else:
            g1, g2 = _grad_by_kernel(g3, x1b, x2b, _wrap(result.reshape(shape3)), p)
        return (_unbatched(g1, batch, x1) if n1[0] is not None else None,
                _unbatched(g2, batch, x2) if n2[0] is not None else None)


def _unbatched(g, batch, x):
    """A (B, rows, cols) gradient of ``x`` expanded to ``batch``, summed back to x's shape."""
    g = _ops().reshape(g, tuple(batch) + tuple(x.shape[-2:]))
    return g if g.shape == x.shape else g.sum_to_size(x.shape)


def _grad_by_kernel(g, x1, x2, dist, p):
    mode = _norm_mode(p)
    ga = _arrays.contiguous(g._data)
    a1, a2 = _arrays.contiguous(x1._data), _arrays.contiguous(x2._data)
    da = _arrays.contiguous(dist._data)
    out1 = _arrays.empty(a1, a1.shape, a1.dtype)
    out2 = _arrays.empty(a2, a2.shape, a2.dtype)
    K = DIST
    K.cdist_backward_3d(ga, a1, a2, da, out1, p, mode)
    gt = _arrays.contiguous(ga.transpose(0, 2, 1))
    dt = _arrays.contiguous(da.transpose(0, 2, 1))
    K.cdist_backward_3d(gt, a2, a1, dt, out2, p, mode)
    return _wrap(out1), _wrap(out2)


class EuclideanDistBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("result", "x1", "x2")

    # r = g / dist (0 where dist = 0): d/dx1 = x1 * sum_j r - r x2, d/dx2 = x2 * sum_i r - r^T x1
    def _backward(self, g):
        result, x1, x2 = self._saved
        ng = _ops()
        res = wrap_out(self, result) if state.enabled else _wrap(result)
        ratio = ng.where(ng.eq(res, 0), 0.0, ng.div(g, ng.where(ng.eq(res, 0), 1.0, res)))
        n1, n2 = self.next_functions
        g1 = g2 = None
        if n1[0] is not None:
            g1 = ng.sub(ng.mul(x1, ng.sum(ratio, -1, keepdim=True)), ng.matmul(ratio, x2))
        if n2[0] is not None:
            g2 = ng.sub(ng.mul(x2, ng.sum(ratio, -2).unsqueeze(-1)),
                        ng.matmul(ratio.mT, x1))
        # (matmul broadcast a batch dim of one input over the other's)
        if g1 is not None and g1.shape != x1.shape:
            g1 = g1.sum_to_size(x1.shape)
        if g2 is not None and g2.shape != x2.shape:
            g2 = g2.sum_to_size(x2.shape)
        return g1, g2


def _euclidean_dist(x1, x2):
    """sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)) by one matrix product, as PyTorch's mm path
    (``EuclideanDistBackward0``)."""
    ng = _ops()
    from numgrad.autograd.grad_mode import no_grad
    with no_grad():
        n1 = ng.sum(ng.pow(x1, 2), -1, keepdim=True)
        n2 = ng.sum(ng.pow(x2, 2), -1, keepdim=True)
        a = ng.cat([ng.mul(x1, -2), n1, ng.ones_like(n1)], -1)
        b = ng.cat([x2, ng.ones_like(n2), n2], -1)
        r = ng.sqrt(ng.clamp_min(ng.matmul(a, b.mT), 0))
    out = _wrap(r._data)
    if state.enabled and (x1._requires_grad or x2._requires_grad):
        attach(out, EuclideanDistBackward0((edge(x1), edge(x2)), (out._data, x1, x2)))
    return out


def _check(x1, x2, p, compute_mode):
    for name, x, pos in (("x1", x1, 1), ("x2", x2, 2)):
        if not isinstance(x, Tensor):
            raise TypeError(f"cdist(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(x).__name__}")
    if isinstance(p, str) or p is None or not isinstance(p, (int, float, np.number)):
        raise TypeError(f"cdist(): argument 'p' (position 3) must be float, not "
                        f"{type(p).__name__}")
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{x.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError("X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{dtype_of(x)._legacy}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.device != x2.device:
        raise RuntimeError(f"X1 and X2 must have the same device type. X1: {x1.device.type} "
                           f"X2: {x2.device.type}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {dtype_of(x1)._legacy} but found "
                           f"{dtype_of(x2)._legacy}")
    return float(p), _MODES[compute_mode]


@declare(nodes=("CdistBackward0", "EuclideanDistBackward0"), variants=("function",))
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances ||x1[..., i, :] - x2[..., j, :]||_p for every pair of rows (batch dims
    broadcast): p = 0 counts differing coordinates, p = inf takes the largest."""
    p, mode = _check(x1, x2, p, compute_mode)
    r1, r2 = x1.shape[-2], x2.shape[-2]
    batch = broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    nb = 1
    for b in batch:
        nb *= b
    out_shape = tuple(batch) + (r1, r2)
    empty = x1.numel() == 0 or x2.numel() == 0
    if not empty and p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        if nb == 1:
            r = _euclidean_dist(x1, x2)
        else:
            r = _euclidean_dist(_batched(x1, batch, r1), _batched(x2, batch, r2))
        return _ops().reshape(r, out_shape)
    like = x1._data
    if x1.shape[-1] == 0:
        res = _arrays.zeros(like, (nb, r1, r2), like.dtype)
    else:
        res = _arrays.empty(like, (nb, r1, r2), like.dtype)
        if res.size:
            from numgrad.autograd.grad_mode import no_grad
            with no_grad():
                a1 = _arrays.contiguous(_batched(x1, batch, r1)._data)
                a2 = _arrays.contiguous(_batched(x2, batch, r2)._data)
            DIST.cdist_3d(a1, a2, res, p, _norm_mode(p))
    out = _wrap(res.reshape(out_shape))
    if state.enabled and (x1._requires_grad or x2._requires_grad):
        attach(out, CdistBackward0((edge(x1), edge(x2)), (p, out._data, x1, x2, batch)))
    return out
