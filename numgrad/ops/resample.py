"""Resampling as declared ops: ``interpolate``'s upsample ops (``upsample_nearest2d``,
``upsample_bilinear2d``, ... each with PyTorch's node) and the reflect and replicate pads
(``reflection_pad2d``, ...). Each is a chain of maps along one dim at a time: a gather
(nearest, reflect, replicate) or a blend of gathers (linear, cubic, antialiased), whose
adjoints are scatter-adds; the derivative is ``_resample_backward`` (the adjoint chain), whose
own derivative is the forward op again, so every order of derivative is these ops.
``numgrad.nn.functional`` checks the arguments and builds the maps (index preparation on the
host)."""

import math

import numpy as np

from numgrad import _arrays as A
from numgrad.ops._util import EW, IDX
from numgrad.ops.registry import op

_F = ("functional",)


class AxisMap:
    """out[..., k, ...] = sum_j lam_j[k] x[..., idx_j[k], ...] along ``dim`` (any number of
    terms, summed in order; no weights means a plain gather). ``live``: per term, None or a
    mask of the outputs that read it (elsewhere the term is padding with weight 0 and adds
    exactly 0, even for an inf or nan source). Index arrays live on the host and are copied
    to a GPU once."""

    __slots__ = ("dim", "idx", "lam", "live", "size", "_dev")

    def __init__(self, dim, size, idx, lam=None, live=None):
        # made from sizes and scales alone: a compiled trace may keep them
        self.dim, self.size = dim, size
        self.idx = tuple(A.constant(i) for i in idx)
        self.lam = lam and tuple(A.constant(v) for v in lam)
        self.live = tuple(None if m is None else A.constant(m) for m in live or (None,) * len(idx))
        self._dev = None

    def on(self, arr):
        """(indices, weights, live masks) on ``arr``'s device, the weights in its dtype."""
        if arr.__class__ is np.ndarray:
            return self.idx, self.lam and tuple(A.constant(v.astype(arr.dtype, copy=False))
                                                for v in self.lam), self.live
        if self._dev is None:
            cls = arr.__class__
            self._dev = (tuple(cls.from_host(i) for i in self.idx),
                         self.lam and tuple(cls.from_host(v) for v in self.lam),
                         tuple(None if m is None else cls.from_host(m) for m in self.live))
        return self._dev


def _drop_padding(t, w, m):
    """t where the term is live, else its weight there (0): padding adds nothing."""
    if m is None:
        return t
    k = w.shape[0]
    return EW.ternary(EW.where, m.reshape(1, k, 1), t, w.reshape(1, k, 1), t.dtype, t.shape,
                      out=t)


def _split(shape, d):
    return math.prod(shape[:d]), shape[d], math.prod(shape[d + 1:])


def _map_forward(arr, m):
    outer, n, inner = _split(arr.shape, m.dim)
    x3 = A.contiguous(arr).reshape(outer, n, inner)
    idx, lam, live = m.on(arr)
    k = m.idx[0].size
    out_shape = arr.shape[:m.dim] + (k,) + arr.shape[m.dim + 1:]
    out = A.empty(arr, (outer, k, inner), arr.dtype)
    if out.size == 0:
        return out.reshape(out_shape)
    K = IDX.on(arr)
    K.gather_axis(x3, idx[0], out)
    if lam is not None:
        other = A.empty(arr, out.shape, arr.dtype)
        EW.binary(EW.mul, out, lam[0].reshape(1, k, 1), out.dtype, out.shape, out=out)
        _drop_padding(out, lam[0], live[0])
        for i, w, v in zip(idx[1:], lam[1:], live[1:]):
            K.gather_axis(x3, i, other)
            EW.binary(EW.mul, other, w.reshape(1, k, 1), out.dtype, out.shape, out=other)
            EW.binary(EW.add, out, _drop_padding(other, w, v), out.dtype, out.shape, out=out)
    return out.reshape(out_shape)


def _map_adjoint(arr, m):
    outer, k, inner = _split(arr.shape, m.dim)
    g3 = A.contiguous(arr).reshape(outer, k, inner)
    out = A.zeros(arr, (outer, m.size, inner), arr.dtype)
    out_shape = arr.shape[:m.dim] + (m.size,) + arr.shape[m.dim + 1:]
    if g3.size == 0:
        return out.reshape(out_shape)
    idx, lam, live = m.on(arr)
    K = IDX.on(arr)
    if lam is None:
        K.scatter_add_axis(g3, idx[0], out)
    else:
        for i, w, v in zip(idx, lam, live):
            t = EW.binary(EW.mul, g3, w.reshape(1, k, 1), g3.dtype, g3.shape)
            K.scatter_add_axis(_drop_padding(t, w, v), i, out)
    return out.reshape(out_shape)


class Resampling:
    """What a resampling op applies: its maps in order, the input's shape, the output's shape
    when it is empty (a pad whose output has no element reads none of the input), and the
    op (its derivative's derivative is the op again)."""

    __slots__ = ("maps", "in_shape", "empty_shape", "op")

    def __init__(self, maps, in_shape, empty_shape=None, op=None):
        self.maps = tuple(maps)
        self.in_shape = tuple(in_shape)
        self.empty_shape = empty_shape
        self.op = op


# d/dg M^T g = M gg: the maps are linear, so the derivative is the forward op again
def _adjoint_grad(grad, plan):
    return plan.op(grad, plan)


@op(node="ResampleAdjointBackward", inputs=("grad_out",), variants=(),
    grads={"grad_out": _adjoint_grad})
def _resample_backward(grad_out, plan):
    """M_1^T ... M_n^T grad_out: the scatter-adds of the maps, last map first (zeros of the
    input's shape when the output was empty)."""
    arr = grad_out._data
    if plan.empty_shape is not None:
        return A.zeros(arr, plan.in_shape, arr.dtype), {"plan": plan}
    for m in reversed(plan.maps):
        arr = _map_adjoint(arr, m)
    return (arr if plan.maps else EW.unary(EW.copy, arr, arr.dtype)), {"plan": plan}


# y = M_n ... M_1 x (linear): dx = M_1^T ... M_n^T g
def _resample_grad(grad, plan):
    return _resample_backward(grad, plan)


def _resample(input, plan):
    """M_n ... M_1 input (a copy when there is no map; zeros when the output is empty)."""
    arr = input._data
    if plan.empty_shape is not None:
        return A.zeros(arr, plan.empty_shape, arr.dtype), {"plan": plan}
    for m in plan.maps:
        arr = _map_forward(arr, m)
    return (arr if plan.maps else EW.unary(EW.copy, arr, arr.dtype)), {"plan": plan}


def _declare(name, node):
    return op(name=name, node=node, variants=_F, grads={"self": _resample_grad})(_resample)


# mode key -> the op, as PyTorch names them
UPSAMPLE = {key: _declare(name, node) for key, name, node in (
    (("nearest", 1), "upsample_nearest1d", "UpsampleNearest1DBackward0"),
    (("nearest", 2), "upsample_nearest2d", "UpsampleNearest2DBackward0"),
    (("linear", 1), "upsample_linear1d", "UpsampleLinear1DBackward0"),
    (("bilinear", 2), "upsample_bilinear2d", "UpsampleBilinear2DBackward0"),
    (("bicubic", 2), "upsample_bicubic2d", "UpsampleBicubic2DBackward0"),
    (("nearest-exact", 1), "_upsample_nearest_exact1d", "UpsampleNearestExact1DBackward0"),
    (("nearest-exact", 2), "_upsample_nearest_exact2d", "UpsampleNearestExact2DBackward0"),
    (("bilinear-aa", 2), "_upsample_bilinear2d_aa", "UpsampleBilinear2DAaBackward0"),
    (("bicubic-aa", 2), "_upsample_bicubic2d_aa", "UpsampleBicubic2DAaBackward0"))}
PAD = {(mode, k): _declare(f"{name}_pad{k}d", f"{label}Pad{k}DBackward0")
       for mode, name, label in (("reflect", "reflection", "Reflection"),
                                 ("replicate", "replication", "Replication"))
       for k in (1, 2, 3)}


def resample(input, maps, ops, key, empty_shape=None):
    """Op ``ops[key]`` applying ``maps`` to ``input`` (an empty output: ``empty_shape``)."""
    fn = ops[key]
    return fn(input, Resampling(maps, input._data.shape, empty_shape, fn))
