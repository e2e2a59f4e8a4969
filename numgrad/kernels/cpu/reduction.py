"""Reduction kernels: sum/mean, amax/amin, max/min with indices, norms, softmax family.

Every kernel works on a 3-D view ``(outer, reduced, inner)`` of its input and writes an
``(outer, inner)`` result, so one signature per dtype covers any dim of any tensor; a
reduction over several non-adjacent dims runs one pass per run of adjacent dims.
Float32 sums accumulate in float64.
"""

import math

import numpy as np
from numba import prange, types
from numba.extending import overload

from numgrad import _arrays
from numgrad.kernels import RED
from numgrad.kernels._jit import jit, specialize
from numgrad.kernels.cpu._fastmath import fexp


def acc_zero(x):
    """Zero of the accumulator type for elements of array ``x``."""
    raise NotImplementedError


@overload(acc_zero, inline="always")
def _acc_zero(x):
    if isinstance(x.dtype, types.Float):
        return lambda x: 0.0
    return lambda x: 0


def acc_buffer(x, n):
    """A zeroed accumulator array of length ``n`` for elements of array ``x``."""
    raise NotImplementedError


@overload(acc_buffer, inline="always")
def _acc_buffer(x, n):
    if isinstance(x.dtype, types.Float):
        return lambda x, n: np.zeros(n, np.float64)
    return lambda x, n: np.zeros(n, np.int64)


_FAST = {"fastmath": {"reassoc", "nsz", "contract"}}
_ND = np.ndarray  # launchers hand data of any other class (CUDA) to the twin module


@jit(**_FAST)
def sum_3d(x, out, scale):
    """out[o, i] = scale * sum_r x[o, r, i].

    The wide sum is rounded to the output dtype before scaling (a mean is sum / n in the
    output dtype, as in PyTorch: a float32 mean whose sum overflows is inf)."""
    n_o, n_r, n_i = x.shape
    to = out.dtype.type
    if n_i == 1:
        for o in range(n_o):
            acc = acc_zero(x)
            for r in range(n_r):
                acc += x[o, r, 0]
            out[o, 0] = to(acc) * scale
        return
    tmp = acc_buffer(x, n_i)
    for o in range(n_o):
        tmp[:] = 0
        for r in range(n_r):
            for i in range(n_i):
                tmp[i] += x[o, r, i]
        for i in range(n_i):
            out[o, i] = to(tmp[i]) * scale


sum_3d.writes = (1,)  # for numgrad.compile's scheduling: it reads x and writes only out


@jit
def extreme_3d(x, out, largest):
    """out[o, i] = max_r (or min_r) x[o, r, i]; nan wins, as in PyTorch."""
    n_o, n_r, n_i = x.shape
    for o in range(n_o):
        for i in range(n_i):
            m = x[o, 0, i]
            if m == m:
                for r in range(1, n_r):
                    v = x[o, r, i]
                    if v != v:
                        m = v
                        break
                    if (v > m) if largest else (v < m):
                        m = v
            out[o, i] = m


@jit
def extreme_index_3d(x, values, indices, largest):
    """Values and first indices of the max (or min) along r; nan wins."""
    n_o, n_r, n_i = x.shape
    for o in range(n_o):
        for i in range(n_i):
            m = x[o, 0, i]
            k = 0
            if m == m:
                for r in range(1, n_r):
                    v = x[o, r, i]
                    if v != v:
                        m = v
                        k = r
                        break
                    if (v > m) if largest else (v < m):
                        m = v
                        k = r
            values[o, i] = m
            indices[o, i] = k


@jit
def put_along_3d(src, idx, out):
    """out = 0; out[o, idx[o, i], i] = src[o, i] (the backward of max/min along a dim)."""
    out[:] = 0
    n_o, n_i = src.shape
    for o in range(n_o):
        for i in range(n_i):
            out[o, idx[o, i], i] = src[o, i]


@jit
def has_nan(x):
    """Whether flat array ``x`` holds a nan (anomaly mode)."""
    for i in range(x.size):
        if x[i] != x[i]:
            return True
    return False


@jit
def take_along_3d(x, idx, out):
    """out[o, i] = x[o, idx[o, i], i] (gather along r with per-position indices)."""
    n_o, n_i = out.shape
    for o in range(n_o):
        for i in range(n_i):
            out[o, i] = x[o, idx[o, i], i]


@jit(**_FAST)
def norm_3d(x, out, p):
    """out[o, i] = (sum_r |x|^p)^(1/p), with p in {0, 1, 2, inf, -inf} special-cased."""
    n_o, n_r, n_i = x.shape
    for o in range(n_o):
        for i in range(n_i):
            if p == math.inf or p == -math.inf:
                m = abs(x[o, 0, i]) if n_r else 0.0
                for r in range(1, n_r):
                    v = abs(x[o, r, i])
                    if v != v or ((v > m) if p > 0 else (v < m)):
                        m = v
                out[o, i] = m
                continue
            acc = 0.0
            if p == 2:
                for r in range(n_r):
                    v = x[o, r, i]
                    acc += v * v
                out[o, i] = math.sqrt(acc)
            elif p == 1:
                for r in range(n_r):
                    acc += abs(x[o, r, i])
                out[o, i] = acc
            elif p == 0:
                for r in range(n_r):
                    acc += 1.0 if x[o, r, i] != 0 else 0.0
                out[o, i] = acc
            else:
                for r in range(n_r):
                    acc += abs(x[o, r, i]) ** p
                out[o, i] = acc ** (1.0 / p)


@jit
def softmax_3d(x, out, log):
    """softmax (or log_softmax) along r: e^(x - m) / sum e^(x - m), m = max_r x.

    log_softmax is (x - m) - log(sum): subtracting m first keeps it exact when |m| dwarfs
    log(sum) (x - (m + log(sum)) rounds m + log(sum) back to m: logits of 1e20 gave 0)."""
    n_o, n_r, n_i = x.shape
    for o in range(n_o):
        for i in range(n_i):
            m = x[o, 0, i]
            for r in range(1, n_r):
                if x[o, r, i] > m:
                    m = x[o, r, i]
            s = 0.0
            for r in range(n_r):
                s += fexp(x[o, r, i] - m)
            if log:
                log_s = math.log(s)
                for r in range(n_r):
                    out[o, r, i] = (x[o, r, i] - m) - log_s
            else:
                inv = 1.0 / s
                for r in range(n_r):
                    out[o, r, i] = fexp(x[o, r, i] - m) * inv


@jit
def logsumexp_3d(x, out):
    """out[o, i] = m + log sum_r e^(x - m), m = max_r x (inf-safe; any nan gives nan, as in
    PyTorch); an empty row gives -inf, the log of an empty sum."""
    n_o, n_r, n_i = x.shape
    for o in range(n_o):
        for i in range(n_i):
            if n_r == 0:
                out[o, i] = -math.inf
                continue
            m = x[o, 0, i]
            for r in range(1, n_r):
                v = x[o, r, i]
                if v != v:
                    m = v
                    break
                if v > m:
                    m = v
            if m != m or m == math.inf or m == -math.inf:
                out[o, i] = m
                continue
            s = 0.0
            for r in range(n_r):
                s += fexp(x[o, r, i] - m)
            out[o, i] = m + math.log(s)


# d softmax: gx = y * (g - sum_r g y)
@jit
def softmax_bwd_3d(g, y, out):
    n_o, n_r, n_i = y.shape
    for o in range(n_o):
        for i in range(n_i):
            s = 0.0
            for r in range(n_r):
                s += g[o, r, i] * y[o, r, i]
            for r in range(n_r):
                out[o, r, i] = y[o, r, i] * (g[o, r, i] - s)


# d log_softmax: gx = g - e^y * sum_r g
@jit
def log_softmax_bwd_3d(g, y, out):
    n_o, n_r, n_i = y.shape
    for o in range(n_o):
        for i in range(n_i):
            s = 0.0
            for r in range(n_r):
                s += g[o, r, i]
            for r in range(n_r):
                out[o, r, i] = g[o, r, i] - fexp(y[o, r, i]) * s


# --- the same along the last dim of C-contiguous rows: unit stride, so the exp/sum loops
# vectorize; rows run in parallel for large inputs ---------------------------------------


@jit(fastmath=False)  # said explicitly: Numba would pass the caller's fastmath on
def _shift(x, m, log_s, out):
    """out = (x - m) - log_s: log_softmax as in ``softmax_3d``. Compiled without fastmath,
    which would reassociate it into x - (m + log_s), the inexact form."""
    for c in range(x.size):
        out[c] = (x[c] - m) - log_s


@jit
def _row_max(row):
    """The largest of a row's values (a nan among them is looked for apart), kept as eight
    running maxima so the comparisons overlap: 2.6x one running max on 1000-wide rows. The
    max does not depend on the order; which of -0 and +0 comes out can differ, and softmax
    gives the same result for either (e^(x - m) is 1 for both, and log_softmax's x - m - log s
    has log s >= log 2 when a row holds both zeros)."""
    n = row.size
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = row[0]
    c = 0
    while c + 8 <= n:
        v0, v1, v2, v3 = row[c], row[c + 1], row[c + 2], row[c + 3]
        v4, v5, v6, v7 = row[c + 4], row[c + 5], row[c + 6], row[c + 7]
        m0 = v0 if v0 > m0 else m0
        m1 = v1 if v1 > m1 else m1
        m2 = v2 if v2 > m2 else m2
        m3 = v3 if v3 > m3 else m3
        m4 = v4 if v4 > m4 else m4
        m5 = v5 if v5 > m5 else m5
        m6 = v6 if v6 > m6 else m6
        m7 = v7 if v7 > m7 else m7
        c += 8
    while c < n:
        v = row[c]
        m0 = v if v > m0 else m0
        c += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0


def _softmax_rows(x, out, log):
    n_r, n_c = x.shape
    for r in prange(n_r):
        m = _row_max(x[r])
        nan = False
        for c in range(n_c):  # a flag: this loop vectorizes
            nan |= x[r, c] != x[r, c]
        if nan:
            m = x.dtype.type(math.nan)
        # the row's sum in its own dtype, as PyTorch's vectorized kernel: the loop vectorizes
        # into many partial sums, each term is at most 1 (float32 log_softmax of 1024x1000:
        # 575 -> 402 us against a float64 sum)
        s = x.dtype.type(0)
        for c in range(n_c):
            s += fexp(x[r, c] - m)
        if log:
            _shift(x[r], m, math.log(s), out[r])
        else:
            inv = 1.0 / s
            for c in range(n_c):
                out[r, c] = fexp(x[r, c] - m) * inv


# d softmax: gx = y (g - sum g y)
def _softmax_bwd_rows(g, y, out):
    n_r, n_c = y.shape
    for r in prange(n_r):
        s = 0.0
        for c in range(n_c):
            s += g[r, c] * y[r, c]
        for c in range(n_c):
            out[r, c] = y[r, c] * (g[r, c] - s)


# d log_softmax: gx = g - e^y sum g
def _log_softmax_bwd_rows(g, y, out):
    n_r, n_c = y.shape
    for r in prange(n_r):
        s = g.dtype.type(0)  # in the row's dtype, as the forward's sum
        for c in range(n_c):
            s += g[r, c]
        for c in range(n_c):
            out[r, c] = g[r, c] - fexp(y[r, c]) * s


def _pair(fn):
    serial = jit(fn, **_FAST)
    par = specialize(fn, "parallel", dict(_FAST, parallel=True))
    return serial, par


softmax_rows, softmax_rows_par = _pair(_softmax_rows)
softmax_bwd_rows, softmax_bwd_rows_par = _pair(_softmax_bwd_rows)
log_softmax_bwd_rows, log_softmax_bwd_rows_par = _pair(_log_softmax_bwd_rows)
_ROWS = {softmax_3d: (softmax_rows, softmax_rows_par),
         softmax_bwd_3d: (softmax_bwd_rows, softmax_bwd_rows_par),
         log_softmax_bwd_3d: (log_softmax_bwd_rows, log_softmax_bwd_rows_par)}
PARALLEL_MIN = 1 << 16


# ----------------------------------------------------------------------------------------
# launchers
# ----------------------------------------------------------------------------------------


def runs(dims):
    """Split sorted dims into runs of adjacent dims: (0, 1, 3) -> [(0, 2), (3, 4)]."""
    out = []
    for d in dims:
        if out and out[-1][1] == d:
            out[-1][1] = d + 1
        else:
            out.append([d, d + 1])
    return out


def as3d(x, start, stop):
    """``x`` as (outer, prod(shape[start:stop]), inner): a view, or a copy if strides forbid."""
    shape = x.shape
    outer = 1
    for s in shape[:start]:
        outer *= s
    red = 1
    for s in shape[start:stop]:
        red *= s
    inner = 1
    for s in shape[stop:]:
        inner *= s
    return _arrays.reshape(x, (outer, red, inner))


def _keep_shape(shape, start, stop):
    return shape[:start] + (1,) * (stop - start) + shape[stop:]


def reduce_dims(kernel, x, dims, dtype, *args):
    """Apply an (outer, r, inner) -> (outer, inner) kernel over ``dims`` (sorted, non-empty).

    Returns the result with the reduced dims kept as size 1.
    """
    if x.__class__ is not _ND:
        return RED.cuda().reduce_dims(kernel, x, dims, dtype, *args)
    passes = runs(dims)
    last = len(passes) - 1
    for k, (start, stop) in enumerate(reversed(passes)):
        x3 = as3d(x, start, stop)
        out = np.empty((x3.shape[0], x3.shape[2]), dtype)
        kernel(x3, out, *args) if k == last else kernel(x3, out, *_rest_args(kernel, args))
        x = out.reshape(_keep_shape(x.shape, start, stop))
    return x


def _rest_args(kernel, args):
    # the scale of sum/mean applies once, on the last pass (an earlier pass may produce
    # nothing, e.g. mean over (0, 2) of a (0, 1, 1) tensor is nan); other kernels take the
    # same arguments every pass
    if kernel is sum_3d:
        return (args[0].__class__(1),)
    return args


def sum_all(x, dtype, scale):
    """scale * sum of every element, as a 0-d array."""
    if x.__class__ is not _ND:
        return RED.cuda().sum_all(x, dtype, scale)
    out = np.empty((1, 1), dtype)
    sum_3d(_arrays.reshape(x, (1, x.size, 1)), out, scale)
    return out.reshape(())


def sum_dims(x, dims, dtype, scale):
    """sum over ``dims`` (non-empty) times ``scale`` (mean: 1/n); reduced dims kept as 1."""
    if x.__class__ is not _ND:
        return RED.cuda().sum_dims(x, dims, dtype, scale)
    return reduce_dims(sum_3d, x, dims, dtype, scale)


def _rows(kernel, size):
    serial, par = _ROWS[kernel]
    return par if size >= PARALLEL_MIN else serial


def along(kernel, x, dim, out_dtype, *args):
    """Apply an (o, r, i) -> (o, r, i) kernel along ``dim``; the result has x's shape."""
    if x.__class__ is not _ND:
        return RED.cuda().along(kernel, x, dim, out_dtype, *args)
    if not x.size:  # the kernels read each line's first value
        return np.empty(x.shape, out_dtype)
    if dim == x.ndim - 1 and x.flags.c_contiguous:
        x2 = x.reshape(-1, x.shape[-1])
        out = np.empty(x2.shape, out_dtype)
        _rows(kernel, x.size)(x2, out, *args)
        return out.reshape(x.shape)
    x3 = as3d(x, dim, dim + 1)
    out = np.empty(x3.shape, out_dtype)
    kernel(x3, out, *args)
    return out.reshape(x.shape)


def along2(kernel, g, y, dim, out_dtype):
    """Like ``along`` for backward kernels of two same-shaped inputs."""
    if g.__class__ is not _ND or y.__class__ is not _ND:
        return RED.cuda().along2(kernel, g, y, dim, out_dtype)
    if (dim == y.ndim - 1 and y.flags.c_contiguous and g.flags.c_contiguous and y.size
            and g.shape == y.shape):
        y2 = y.reshape(-1, y.shape[-1])
        out = np.empty(y2.shape, out_dtype)
        _rows(kernel, y.size)(g.reshape(y2.shape), y2, out)
        return out.reshape(y.shape)
    g3 = as3d(g, dim, dim + 1)
    y3 = as3d(y, dim, dim + 1)
    out = np.empty(y3.shape, out_dtype)
    kernel(g3, y3, out)
    return out.reshape(y.shape)
