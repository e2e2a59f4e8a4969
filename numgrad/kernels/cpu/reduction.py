"""Reduction kernels: sum/mean, amax/amin, max/min with indices, norms (the softmax family
and logsumexp: ``numgrad.kernels.cpu.rows``).

Every kernel works on a 3-D view ``(outer, reduced, inner)`` of its input and writes an
``(outer, inner)`` result, so one signature per dtype covers any dim of any tensor; a
reduction over several non-adjacent dims runs one pass per run of adjacent dims.
Float32 sums accumulate in float64.
"""

import math

import numpy as np
from numba import types
from numba.extending import overload

from numgrad import _arrays
from numgrad.kernels import RED
from numgrad.kernels import rows as R
from numgrad.kernels._jit import jit
from numgrad.kernels.cpu import indexing as IDX_CPU
from numgrad.kernels.cpu import rows as ROWS


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


def row_of(x, o, i):
    """Row (o, :, i) of 3-D ``x`` as (buffer, offset, stride) for the row functions."""
    raise NotImplementedError


@overload(row_of, inline="always")
def _row_of(x, o, i):
    if x.layout == "C":  # the flat data: unit-stride rows vectorize
        return lambda x, o, i: (x[o].reshape(-1), i, x.shape[2])
    return lambda x, o, i: (x[o, :, i], 0, 1)


_FAST = {"fastmath": {"reassoc", "nsz", "contract"}}
_ND = np.ndarray  # launchers hand data of any other class (CUDA) to the twin module

# the kernels an op calls with data of either device: the handle (RED.<name>) hands CUDA
# data to ``numgrad.kernels.cuda.reduction``'s kernel of the same name
EITHER_DEVICE = ("has_nan", "extreme_index_3d", "take_along_3d", "put_along_3d")


_SUM_ROW = ROWS._F["sum_row"]
_EXTREME_ROW = ROWS._F["extreme_row"]
_NORM_ROW = ROWS._F["norm_row"]
# the index functions written once for both devices (``numgrad.kernels.gathers``)
_PUT_ONE = IDX_CPU.F["put_one"]
_GATHER_ONE = IDX_CPU.F["gather_one"]
_HAS_NAN_RUN = IDX_CPU.F["has_nan_run"]


@jit(**_FAST)
def sum_3d(x, out, scale):
    """out[o, i] = scale * sum_r x[o, r, i] (``sum_row``).

    The wide sum is rounded to the output dtype before scaling (a mean is sum / n in the
    output dtype, as in PyTorch: a float32 mean whose sum overflows is inf). With inner
    dims, a CPU-only loop order: rows outer, the outputs' partial sums inner (it
    vectorizes over the outputs; each output still sums its elements in order)."""
    n_o, n_r, n_i = x.shape
    if n_i == 1:
        for o in range(n_o):
            buf, at, _ = row_of(x, o, 0)
            _SUM_ROW(buf, at, 1, n_r, out[o], 0, scale, acc_zero(x), 0)
        return
    to = out.dtype.type
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
    """out[o, i] = max_r (or min_r) x[o, r, i]; nan wins, as in PyTorch (``extreme_row``)."""
    n_o, n_r, n_i = x.shape
    for o in range(n_o):
        for i in range(n_i):
            buf, at, st = row_of(x, o, i)
            _EXTREME_ROW(buf, at, st, n_r, largest, out[o], i, out[o], i, False, 0)


@jit
def extreme_index_3d(x, values, indices, largest):
    """Values and first indices of the max (or min) along r; nan wins (``extreme_row``)."""
    n_o, n_r, n_i = x.shape
    for o in range(n_o):
        for i in range(n_i):
            buf, at, st = row_of(x, o, i)
            _EXTREME_ROW(buf, at, st, n_r, largest, values[o], i, indices[o], i, True, 0)


@jit
def put_along_3d(src, idx, out):
    """out = 0; out[o, idx[o, i], i] = src[o, i] (the backward of max/min along a dim)."""
    out[:] = 0
    n_o, n_i = src.shape
    n_r = out.shape[1]
    for o in range(n_o):
        for i in range(n_i):
            _PUT_ONE(src[o], i, idx[o, i], n_r, out[o, :, i], 0, 1)


@jit
def has_nan(x):
    """Whether flat array ``x`` holds a nan (anomaly mode)."""
    return _HAS_NAN_RUN(x, 0, 1, x.size)


@jit
def take_along_3d(x, idx, out):
    """out[o, i] = x[o, idx[o, i], i] (gather along r with per-position indices)."""
    n_o, n_i = out.shape
    n_r = x.shape[1]
    for o in range(n_o):
        xo = x[o]
        io = idx[o]
        oo = out[o]
        for i in range(n_i):
            _GATHER_ONE(xo[:, i], 0, 1, n_r, io[i], oo, i)


@jit(**_FAST)
def norm_3d(x, out, p):
    """out[o, i] = (sum_r |x|^p)^(1/p), with p in {0, 1, 2, inf, -inf} special-cased
    (``norm_row``)."""
    n_o, n_r, n_i = x.shape
    kind = (R.P2 if p == 2 else R.P1 if p == 1 else R.P0 if p == 0 else
            R.PINF if p == math.inf else R.PNEGINF if p == -math.inf else R.PGEN)
    for o in range(n_o):
        if n_i == 1:  # unit stride (a literal): the sums vectorize
            buf, at, _ = row_of(x, o, 0)
            _NORM_ROW(buf, at, 1, n_r, kind, p, out[o], 0, 0)
            continue
        for i in range(n_i):
            buf, at, st = row_of(x, o, i)
            _NORM_ROW(buf, at, st, n_r, kind, p, out[o], i, 0)


# the softmax family and logsumexp are row kernels written once for both devices
# (``numgrad.kernels.rows``, launched by ``numgrad.kernels.cpu.rows``): these names are theirs
softmax_3d = ROWS.softmax_3d
logsumexp_3d = ROWS.logsumexp_3d
softmax_bwd_3d = ROWS.softmax_bwd_3d
log_softmax_bwd_3d = ROWS.log_softmax_bwd_3d
softmax_rows = ROWS.softmax_rows
softmax_bwd_rows = ROWS.softmax_bwd_rows
log_softmax_bwd_rows = ROWS.log_softmax_bwd_rows


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


def along(kernel, x, dim, out_dtype, *args):
    """Apply ``softmax_3d`` (``args``: log) along ``dim``; the result has x's shape."""
    assert kernel is softmax_3d
    return ROWS.along(x, dim, out_dtype, *args)


def along2(kernel, g, y, dim, out_dtype):
    """Like ``along`` for the backward kernels (``softmax_bwd_3d``, ``log_softmax_bwd_3d``)."""
    assert kernel is softmax_bwd_3d or kernel is log_softmax_bwd_3d
    return ROWS.along2(g, y, dim, out_dtype, kernel is log_softmax_bwd_3d)
