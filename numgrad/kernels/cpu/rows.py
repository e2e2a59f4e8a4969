"""CPU loops over rows, one row function of ``numgrad.kernels.rows`` each: a team of one lane
(the combines return their argument), one row per ``prange`` iteration; the serial or the
multithreaded copy runs as ``numgrad.kernels._parallel.pick`` says.

Rows along the last dim of C-contiguous data have unit stride, written as the literal 1 so
the loops vectorize (those copies compile with reassociation: the row sums vectorize into
many partial sums; layer norm's float64 sums too, which otherwise run as one chain of
dependent adds, 3x slower); lines along another dim have stride ``inner`` and keep the plain
order.
Each launcher hands data that is not a NumPy array to the CUDA module of the same names.
"""

import numpy as np
from numba import prange, types
from numba.extending import overload

from numgrad.kernels import LazyKernels
from numgrad.kernels import rows as R
from numgrad.kernels._jit import inline, jit, specialize
from numgrad.kernels._parallel import pick
from numgrad.kernels.cpu._bind import bind
from numgrad.kernels.cpu._fastmath import fexp

_FAST = {"fastmath": {"reassoc", "nsz", "contract"}}
_ND = np.ndarray
_CUDA = LazyKernels("rows").cuda()

# --- the team of one ----------------------------------------------------------------------


def _qnan_of(m):
    raise NotImplementedError


@overload(_qnan_of, inline="always")
def _qnan_impl(m):
    if m == types.float32:
        return lambda m: np.float32(np.nan)
    return lambda m: np.float64(np.nan)


_TEAM = {"lane0": inline(lambda tm: 0), "lanes": inline(lambda tm: 1),
         "lead": inline(lambda tm: True), "allsum": inline(lambda tm, v: v),
         "allmax": inline(lambda tm, v: v), "anyof": inline(lambda tm, flag: flag),
         "allext": inline(lambda tm, v, big: v),
         "allbest": inline(lambda tm, x, xo, xs, best, largest: best),
         "qnan": inline(lambda m: _qnan_of(m)), "fexp": fexp}


def _compile(name, copy):
    """Inlined into the loops, except ``shift``, compiled apart without fastmath (see its
    docstring)."""
    return jit(copy, fastmath=False) if name == "shift" else inline(copy)


_F = bind(R, R.ROW_FUNCTIONS, __name__, _TEAM, build=_compile)  # this device's copies

# --- loops over rows (``f``: the row function bound by ``_pair``) --------------------------


def _softmax_rows(x, out, log):
    for r in prange(x.shape[0]):
        f(x[r], 0, 1, out[r], 0, 1, x.shape[1], log, x.dtype.type(0), 0)  # noqa: F821


def _softmax_lines(x, out, lines, n, inner, log):
    for line in prange(lines):
        base = (line // inner) * n * inner + line % inner
        f(x, base, inner, out, base, inner, n, log, 0.0, 0)  # noqa: F821


def _softmax_bwd_rows(g, y, out):
    for r in prange(y.shape[0]):
        f(g[r], 0, 1, y[r], 0, 1, out[r], 0, 1, y.shape[1], 0.0, 0)  # noqa: F821


def _log_softmax_bwd_rows(g, y, out):
    for r in prange(y.shape[0]):
        f(g[r], 0, 1, y[r], 0, 1, out[r], 0, 1, y.shape[1], g.dtype.type(0), 0)  # noqa: F821


def _softmax_bwd_lines(g, y, out, lines, n, inner):
    for line in prange(lines):
        base = (line // inner) * n * inner + line % inner
        f(g, base, inner, y, base, inner, out, base, inner, n, 0.0, 0)  # noqa: F821


def _logsumexp_lines(x, out, lines, n, inner):
    for line in prange(lines):
        f(x, (line // inner) * n * inner + line % inner, inner, n, out, line, 0.0, 0)  # noqa: F821


def _layer_norm_rows(x, gamma, beta, eps, out, mean, rstd):
    n = x.shape[1]
    for r in prange(x.shape[0]):
        f(x[r], 0, 1, gamma, 0, 1, beta, 0, 1, eps, n, out[r], 0, 1, mean, r, rstd, r,  # noqa: F821
          0.0, 0)


def _layer_norm_bwd_rows(g, x, mean, rstd, gamma, gx):
    n = x.shape[1]
    for r in prange(x.shape[0]):
        f(g[r], 0, 1, x[r], 0, 1, mean[r], rstd[r], gamma, 0, 1, n, gx[r], 0, 1, 0.0,  # noqa: F821
          0)


def _nll_rows(logp, target, weight, ignore_index, losses, weights):
    n_c = logp.shape[1]
    for r in range(logp.shape[0]):
        if f(logp[r], 0, 1, target[r], weight, 0, 1, ignore_index, n_c, losses, r,  # noqa: F821
             weights, r):
            return r
    return -1


def _nll_bwd_rows(gl, target, weights, scale, out):
    per_sample = gl.size > 1
    for r in range(target.size):
        f(gl[r] if per_sample else gl[0], target[r], weights[r], scale, out[r], 0, 1,  # noqa: F821
          out.shape[1], 0)


def _pair(template, row, options=None):
    """The serial and the multithreaded copy of ``template`` over row function ``row``."""
    options = dict(options or {})
    name = template.__name__.strip("_")
    f = _F[row]
    return (specialize(template, name, options, f=f),
            specialize(template, name + "_par", dict(options, parallel=True), f=f))


_SOFTMAX_ROWS = _pair(_softmax_rows, "softmax_row", _FAST)
_SOFTMAX_LINES = specialize(_softmax_lines, "softmax_lines", f=_F["softmax_row"])
_SOFTMAX_BWD_ROWS = _pair(_softmax_bwd_rows, "softmax_bwd_row", _FAST)
_LOG_SOFTMAX_BWD_ROWS = _pair(_log_softmax_bwd_rows, "log_softmax_bwd_row", _FAST)
_SOFTMAX_BWD_LINES = specialize(_softmax_bwd_lines, "softmax",
                                f=_F["softmax_bwd_row"])
_LOG_SOFTMAX_BWD_LINES = specialize(_softmax_bwd_lines, "log_softmax",
                                    f=_F["log_softmax_bwd_row"])
_LOGSUMEXP_LINES = specialize(_logsumexp_lines, "logsumexp_lines", f=_F["logsumexp_row"])
_LAYER_NORM = _pair(_layer_norm_rows, "layer_norm_row", _FAST)
_LAYER_NORM_BWD = _pair(_layer_norm_bwd_rows, "layer_norm_bwd_row", _FAST)
_NLL = specialize(_nll_rows, "nll", f=_F["nll_row"])
_NLL_BWD = specialize(_nll_bwd_rows, "nll_bwd", f=_F["nll_bwd_row"])


def _c(a):
    """``a`` C-contiguous (a copy only when it is not)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _into(out, shape):
    """A C-contiguous array of ``shape`` to write ``out``'s values in: a view of ``out``, or a
    new array that ``_back`` copies into it."""
    return out.reshape(shape) if out.flags.c_contiguous else np.empty(shape, out.dtype)


def _back(res, out):
    if not out.flags.c_contiguous:
        out[...] = res.reshape(out.shape)


# --- launchers ------------------------------------------------------------------------------


def softmax_rows(x, out, log, parallel=None):
    """softmax (or log_softmax) along the last dim of 2-D ``x`` into 2-D ``out`` (any
    strides: the loops compile for the layouts they get)."""
    if x.__class__ is not _ND:
        return _CUDA.softmax_rows(x, out, log)
    if x.size:
        pick(*_SOFTMAX_ROWS, x.size, parallel=parallel)(x, out, log)


def softmax_3d(x, out, log):
    """softmax (or log_softmax) along axis 1 of 3-D ``x`` into ``out``."""
    if x.__class__ is not _ND:
        return _CUDA.softmax_3d(x, out, log)
    if x.size:
        n_o, n, inner = x.shape
        res = _into(out, x.size)
        _SOFTMAX_LINES(_c(x).reshape(-1), res, n_o * inner, n, inner, log)
        _back(res, out)


def _bwd_rows(g, y, out, log, parallel=None):
    if y.size:
        pair = _LOG_SOFTMAX_BWD_ROWS if log else _SOFTMAX_BWD_ROWS
        pick(*pair, y.size, parallel=parallel)(g, y, out)


def _bwd_3d(g, y, out, log):
    if y.size:
        n_o, n, inner = y.shape
        res = _into(out, y.size)
        k = _LOG_SOFTMAX_BWD_LINES if log else _SOFTMAX_BWD_LINES
        k(_c(g).reshape(-1), _c(y).reshape(-1), res, n_o * inner, n, inner)
        _back(res, out)


# d softmax: gx = y (g - sum g y)
def softmax_bwd_rows(g, y, out, parallel=None):
    if g.__class__ is not _ND or y.__class__ is not _ND:
        return _CUDA.softmax_bwd_rows(g, y, out)
    _bwd_rows(g, y, out, False, parallel)


# d log_softmax: gx = g - e^y sum g
def log_softmax_bwd_rows(g, y, out, parallel=None):
    if g.__class__ is not _ND or y.__class__ is not _ND:
        return _CUDA.log_softmax_bwd_rows(g, y, out)
    _bwd_rows(g, y, out, True, parallel)


# d softmax: gx = y (g - sum g y), along axis 1 of 3-D g and y
def softmax_bwd_3d(g, y, out):
    if g.__class__ is not _ND or y.__class__ is not _ND:
        return _CUDA.softmax_bwd_3d(g, y, out)
    _bwd_3d(g, y, out, False)


# d log_softmax: gx = g - e^y sum g, along axis 1 of 3-D g and y
def log_softmax_bwd_3d(g, y, out):
    if g.__class__ is not _ND or y.__class__ is not _ND:
        return _CUDA.log_softmax_bwd_3d(g, y, out)
    _bwd_3d(g, y, out, True)


def logsumexp_3d(x, out):
    """out[o, i] = m + log sum_r e^(x - m) along axis 1 of 3-D ``x`` (see ``logsumexp_row``)."""
    if x.__class__ is not _ND:
        return _CUDA.logsumexp_3d(x, out)
    n_o, n, inner = x.shape
    if n_o * inner:
        flat = _c(x).reshape(-1) if n else np.zeros(inner, x.dtype)  # an empty row reads x[xo]
        res = _into(out, n_o * inner)
        _LOGSUMEXP_LINES(flat, res, n_o * inner, n, inner)
        _back(res, out)


def along(x, dim, out_dtype, log):
    """softmax (or log_softmax) of ``x`` along ``dim``: a new array of x's shape. Rows along
    the last dim of C-contiguous data take the vectorized copy, any other line the plain
    one (their float32 sums differ in the last bits)."""
    if x.__class__ is not _ND:
        return _CUDA.along(x, dim, out_dtype, log)
    out = np.empty(x.shape, out_dtype)
    if x.size:
        if dim == x.ndim - 1 and x.flags.c_contiguous:
            x2 = x.reshape(-1, x.shape[-1])
            pick(*_SOFTMAX_ROWS, x.size)(x2, out.reshape(x2.shape), log)
        else:
            softmax_3d(_as3d(x, dim), out, log)
    return out


def along2(g, y, dim, out_dtype, log):
    """The softmax (or log_softmax) backward along ``dim`` of same-shaped ``g`` and ``y``."""
    if g.__class__ is not _ND or y.__class__ is not _ND:
        return _CUDA.along2(g, y, dim, out_dtype, log)
    out = np.empty(y.shape, out_dtype)
    if y.size:
        if (dim == y.ndim - 1 and y.flags.c_contiguous and g.flags.c_contiguous
                and g.shape == y.shape):
            y2 = y.reshape(-1, y.shape[-1])
            pair = _LOG_SOFTMAX_BWD_ROWS if log else _SOFTMAX_BWD_ROWS
            pick(*pair, y.size)(g.reshape(y2.shape), y2, out.reshape(y2.shape))
        else:
            if g.shape != y.shape:
                g = np.broadcast_to(g, y.shape)
            _bwd_3d(_as3d(g, dim), _as3d(y, dim), out, log)
    return out


def _as3d(x, dim):
    """``x`` as (outer, x.shape[dim], inner)."""
    outer = int(np.prod(x.shape[:dim], dtype=np.int64))
    inner = int(np.prod(x.shape[dim + 1:], dtype=np.int64))
    return x.reshape(outer, x.shape[dim], inner)


def layer_norm_fwd(x, gamma, beta, eps, out, mean, rstd, parallel=None):
    """Per row of 2-D ``x`` (M, K): mean, 1/sqrt(var + eps) (float64) and the normalized,
    affine output."""
    if x.__class__ is not _ND:
        return _CUDA.layer_norm_fwd(x, gamma, beta, eps, out, mean, rstd)
    if x.shape[0]:
        pick(*_LAYER_NORM, x.size, parallel=parallel)(x, gamma, beta, eps, out, mean, rstd)


# d/dx layer_norm = rstd (g gamma - mean(g gamma) - xhat mean(g gamma xhat)), per row
def layer_norm_bwd_input(g, x, mean, rstd, gamma, gx, parallel=None):
    if x.__class__ is not _ND:
        return _CUDA.layer_norm_bwd_input(g, x, mean, rstd, gamma, gx)
    if x.shape[0]:
        pick(*_LAYER_NORM_BWD, x.size, parallel=parallel)(g, x, mean, rstd, gamma, gx)


def nll(logp, target, weight, ignore_index, losses, weights):
    """losses[n] = -w[t] logp[n, t], weights[n] = w[t] (0 for ignored); returns the first
    out-of-range target's position or -1."""
    if logp.__class__ is not _ND:
        return _CUDA.nll(logp, target, weight, ignore_index, losses, weights)
    return _NLL(logp, target, weight, ignore_index, losses, weights)


# d/dlogp nll = -w_n gl_n scale at [n, t_n], 0 elsewhere
def nll_bwd(gl, target, weights, scale, out):
    """out = 0; out[n, t_n] = -w_n gl_n scale (gl has one entry, or one per sample)."""
    if out.__class__ is not _ND:
        return _CUDA.nll_bwd(gl, target, weights, scale, out)
    _NLL_BWD(gl, target, weights, scale, out)
