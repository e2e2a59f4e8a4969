"""Resampling as declared ops: ``interpolate``'s upsample ops (``upsample_nearest2d``,
``upsample_bilinear2d``, ... each with PyTorch's node) and the reflect and replicate pads
(``reflection_pad2d``, ...). Each is a chain of maps along one dim at a time: a gather
(nearest, reflect, replicate) or a blend of gathers (linear, cubic, antialiased), whose
adjoints are scatter-adds; the derivative is ``_resample_backward`` (the adjoint chain), whose
own derivative is the forward op again, so every order of derivative is these ops.
``upsample`` and ``pad`` build the maps (index preparation on the host) for the sizes
``numgrad.nn.functional`` checked."""

import math

import numpy as np

from numgrad import _arrays as A
from numgrad.ops._util import EW, IDX, _wrap
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
    K = IDX
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
    K = IDX
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
    (("nearest", 3), "upsample_nearest3d", "UpsampleNearest3DBackward0"),
    (("linear", 1), "upsample_linear1d", "UpsampleLinear1DBackward0"),
    (("bilinear", 2), "upsample_bilinear2d", "UpsampleBilinear2DBackward0"),
    (("trilinear", 3), "upsample_trilinear3d", "UpsampleTrilinear3DBackward0"),
    (("bicubic", 2), "upsample_bicubic2d", "UpsampleBicubic2DBackward0"),
    (("nearest-exact", 1), "_upsample_nearest_exact1d", "UpsampleNearestExact1DBackward0"),
    (("nearest-exact", 2), "_upsample_nearest_exact2d", "UpsampleNearestExact2DBackward0"),
    (("nearest-exact", 3), "_upsample_nearest_exact3d", "UpsampleNearestExact3DBackward0"),
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


# ----------------------------------------------------------------------------------------
# the maps of interpolate and of the reflect/replicate/circular pads (host index arithmetic,
# PyTorch's float rules); ``numgrad.nn.functional`` checks the arguments and sizes
# ----------------------------------------------------------------------------------------


def _scale(opmath, in_size, out_size, scale):
    """PyTorch's compute_scales_value: 1/scale when a positive scale is given, else in/out."""
    if scale is not None and scale > 0:
        return opmath(1.0 / scale)
    return opmath(in_size) / opmath(out_size)


def _nearest_map(dim, in_size, out_size, scale):
    if out_size == in_size:
        idx = np.arange(out_size, dtype=np.int64)
    elif out_size == 2 * in_size:
        idx = np.arange(out_size, dtype=np.int64) >> 1
    else:
        s = _scale(np.float32, in_size, out_size, scale)
        src = np.floor(np.arange(out_size, dtype=np.float32) * s).astype(np.int64)
        idx = np.minimum(src, in_size - 1)
    return AxisMap(dim, in_size, (idx,))


def _nearest_exact_map(dim, in_size, out_size, scale):
    """PyTorch's nearest-exact source: min(floor((k + 0.5) * scale), in - 1) in float32."""
    s = _scale(np.float32, in_size, out_size, scale)
    src = np.floor((np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * s)
    return AxisMap(dim, in_size, (np.minimum(src.astype(np.int64), in_size - 1),))


def _linear_map(dim, in_size, out_size, scale, align_corners, opmath):
    if align_corners:
        s = opmath(in_size - 1) / opmath(out_size - 1) if out_size > 1 else opmath(0)
        src = np.arange(out_size, dtype=opmath) * s
    else:
        s = _scale(opmath, in_size, out_size, scale)
        src = s * (np.arange(out_size, dtype=opmath) + opmath(0.5)) - opmath(0.5)
        src = np.where(src < 0, opmath(0), src).astype(opmath)
    i0 = np.minimum(src.astype(np.int64), in_size - 1)
    i1 = i0 + (i0 < in_size - 1)
    lam1 = np.clip(src - i0.astype(opmath), 0, 1).astype(opmath)
    lam0 = (opmath(1) - lam1).astype(opmath)
    return AxisMap(dim, in_size, (i0, i1), (lam0, lam1))


def _cubic_map(dim, in_size, out_size, scale, align_corners, opmath):
    """PyTorch's bicubic taps along one dim: the source x (not clamped at 0), its floor i
    (at most in - 1) and t = x - i in [0, 1]; weights of Keys' cubic convolution (A = -0.75)
    at distances 1 + t, t, 1 - t, 2 - t, on the sources i - 1 .. i + 2 clamped to the border."""
    if align_corners:
        s = opmath(in_size - 1) / opmath(out_size - 1) if out_size > 1 else opmath(0)
        src = np.arange(out_size, dtype=opmath) * s
    else:
        s = _scale(opmath, in_size, out_size, scale)
        src = (s * (np.arange(out_size, dtype=opmath) + opmath(0.5)) - opmath(0.5)).astype(opmath)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    t = np.clip(src - i0.astype(opmath), 0, 1).astype(opmath)
    a, one = opmath(-0.75), opmath(1)

    def near(x):  # |x| <= 1: (A + 2)|x|^3 - (A + 3)|x|^2 + 1
        return (((a + opmath(2)) * x - (a + opmath(3))) * x * x + one).astype(opmath)

    def far(x):  # 1 < |x| < 2: A|x|^3 - 5A|x|^2 + 8A|x| - 4A
        return (((a * x - opmath(5) * a) * x + opmath(8) * a) * x - opmath(4) * a).astype(opmath)

    u = (one - t).astype(opmath)
    lam = (far((t + one).astype(opmath)), near(t), near(u), far((u + one).astype(opmath)))
    idx = tuple(np.clip(i0 - 1 + j, 0, in_size - 1) for j in range(4))
    return AxisMap(dim, in_size, idx, lam)


def _aa_filter(mode, x, opmath):
    """PIL's filters on |x|: the triangle max(1 - |x|, 0) ('bilinear'); Keys' cubic with
    A = -0.5 ('bicubic'): (A + 2)|x|^3 - (A + 3)|x|^2 + 1 below 1, A|x|^3 - 5A|x|^2 + 8A|x| - 4A
    below 2, else 0."""
    x = np.abs(x)
    one, zero = opmath(1), opmath(0)
    if mode == "bilinear":
        return np.where(x < one, one - x, zero).astype(opmath)
    a = opmath(-0.5)
    near = ((a + opmath(2)) * x - (a + opmath(3))) * x * x + one
    far = ((a * x - opmath(5) * a) * x + opmath(8) * a) * x - opmath(4) * a
    return np.where(x < one, near, np.where(x < opmath(2), far, zero)).astype(opmath)


def _aa_map(mode, dim, in_size, out_size, scale, align_corners, opmath):
    """PyTorch's antialiased taps along one dim (as PIL): the filter is widened by the scale s
    when downsampling (support = taps/2 * max(s, 1)); output k reads the sources
    [xmin, xmax) around the centre c = s (k + 0.5), with xmin = max(trunc(c - support + 0.5),
    0) and xmax = min(trunc(c + support + 0.5), in), weighted by filter((j - c + 0.5) / max(s,
    1)) normalised to sum 1 (float arithmetic as PyTorch's: the centre and weights in the
    input's dtype). Every output gets the same number of terms, padded with zero weights."""
    if align_corners:
        s = opmath(in_size - 1) / opmath(out_size - 1) if out_size > 1 else opmath(0)
    else:
        s = _scale(opmath, in_size, out_size, scale)
    s = opmath(s)
    half = 1.0 if mode == "bilinear" else 2.0
    support = opmath(half * float(s)) if s >= 1 else opmath(half)
    invscale = opmath(1.0 / float(s)) if s >= 1 else opmath(1)
    taps = int(math.ceil(float(support))) * 2 + 1
    center = (float(s) * (np.arange(out_size, dtype=np.float64) + 0.5)).astype(opmath)
    xmin = np.maximum(((center - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    xmax = np.minimum(((center + support).astype(np.float64) + 0.5).astype(np.int64), in_size)
    xsize = xmax - xmin
    idx, lam, live = [], [], []
    total = np.zeros(out_size, dtype=opmath)
    for j in range(taps):
        pos = xmin + j
        arg = (((pos.astype(opmath) - center).astype(opmath).astype(np.float64) + 0.5)
               * float(invscale)).astype(opmath)
        w = np.where(j < xsize, _aa_filter(mode, arg, opmath), opmath(0)).astype(opmath)
        total = (total + w).astype(opmath)
        idx.append(np.minimum(pos, in_size - 1))
        lam.append(w)
        live.append(None if (j < xsize).all() else j < xsize)
    nz = total != 0
    safe = np.where(nz, total, opmath(1)).astype(opmath)
    lam = tuple(np.where(nz, w / safe, w).astype(opmath) for w in lam)
    return AxisMap(dim, in_size, tuple(idx), lam, live)


def upsample(input, mode, antialias, output_size, scales, align_corners):
    """``input`` (N, C, *spatial) resized to the checked ``output_size`` by the upsample op
    of ``mode`` (with ``antialias``: PIL's widened filters), ``scales`` the given scale
    factors (or None)."""
    shape = input._data.shape
    dim = len(shape) - 2
    key = (mode + "-aa" if antialias else mode, dim)
    scales = scales or [None] * dim
    opmath = input._data.dtype.type
    maps = []
    for i in reversed(range(dim)):  # the last dim first: PyTorch's order of the blends
        d = 2 + i
        if antialias:
            if output_size[i] != shape[d]:  # PyTorch leaves a dim of unchanged size as it is
                maps.append(_aa_map(mode, d, shape[d], output_size[i], scales[i],
                                    align_corners, opmath))
        elif mode == "nearest":
            maps.append(_nearest_map(d, shape[d], output_size[i], scales[i]))
        elif mode == "nearest-exact":
            maps.append(_nearest_exact_map(d, shape[d], output_size[i], scales[i]))
        elif mode == "bicubic":
            maps.append(_cubic_map(d, shape[d], output_size[i], scales[i], align_corners,
                                   opmath))
        else:
            maps.append(_linear_map(d, shape[d], output_size[i], scales[i], align_corners,
                                    opmath))
    return resample(input, maps, UPSAMPLE, key)


def pad_index(mode, n, lo, hi):
    j = np.arange(-lo, n + hi, dtype=np.int64)
    if mode == "reflect":
        j = np.abs(j)
        return np.where(j >= n, 2 * (n - 1) - j, j)
    return np.clip(j, 0, n - 1)


def pad_circular(input, widths, out_shape):
    """PyTorch's circular padding: the centre copied in, then each padded dim's two borders
    copied from the opposite side of the output (``CopySlices``); ``out_shape`` is checked."""
    shape = input._data.shape
    nd, k = len(shape), len(widths) // 2
    out = _wrap(A.zeros(input._data, tuple(out_shape), input._data.dtype))
    dst = [slice(None)] * nd
    src = [slice(None)] * nd
    for i in range(k):
        d = nd - 1 - i
        lo, hi = widths[2 * i], widths[2 * i + 1]
        dst[d] = slice(max(lo, 0), out_shape[d] - max(hi, 0))
        src[d] = slice(max(-lo, 0), shape[d] - max(-hi, 0))
    out[tuple(dst)] = input[tuple(src)]
    for i in range(k):
        d = nd - 1 - i
        lo, hi = widths[2 * i], widths[2 * i + 1]
        size = out_shape[d]
        key = [slice(None)] * nd
        if lo > 0:
            a, b = list(key), list(key)
            a[d] = slice(0, lo)
            b[d] = slice(size - lo - max(hi, 0), size - max(hi, 0))
            out[tuple(a)] = out[tuple(b)]
        if hi > 0:
            a, b = list(key), list(key)
            a[d] = slice(size - hi, size)
            b[d] = slice(max(lo, 0), max(lo, 0) + hi)
            out[tuple(a)] = out[tuple(b)]
    return out


def pad(input, widths, mode, out_shape):
    """``input`` padded (or cropped) by the checked ``widths`` (last dim first) in ``mode``
    ('reflect', 'replicate': the ``PAD`` ops; 'circular': PyTorch's copies) to the checked
    ``out_shape``."""
    if mode == "circular":
        return pad_circular(input, widths, out_shape)
    shape = input._data.shape
    nd = len(shape)
    k = len(widths) // 2
    if 0 in out_shape:  # nothing to gather (and no index arrays the size of a huge padded dim)
        return resample(input, (), PAD, (mode, k), tuple(out_shape))
    maps = []
    for i in range(k):
        d = nd - 1 - i
        lo, hi = widths[2 * i], widths[2 * i + 1]
        if lo or hi:
            maps.append(AxisMap(d, shape[d], (pad_index(mode, shape[d], lo, hi),)))
    return resample(input, maps, PAD, (mode, k))
