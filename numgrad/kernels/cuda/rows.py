"""CUDA kernels over rows, one row function of ``numgrad.kernels.rows`` each (the CPU
compiles the same functions in ``numgrad.kernels.cpu.rows``; same launcher names here).

A row is served by a segment of ``tr`` threads of a block (``tr`` a power of two up to the
block, see ``reduction._lanes``): the team the row functions see, its lanes striding over
the row and combining partial results by trees in shared memory (float64). With ``tr`` equal
to the block this is one block per row; shorter or strided rows share a block. Blocks loop
over groups of rows, so any grid size is correct; a segment past the last row runs every
combine with an empty row (n = 0) and writes nothing.
"""

import math

import numpy as np
from numba import cuda, float64, int64

from numgrad.kernels import rows as R
from numgrad.kernels.cpu.reduction import as3d
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import CudaArray, from_any, vec
from numgrad.kernels.cuda.indexing import device_int, first_found
from numgrad.kernels.cuda.reduction import (
    MAX,
    MIN,
    NT,
    _geom,
    _rows,
    _seg_output,
    _tree_best,
    _tree_ext,
    _tree_sum,
)

# --- the team of a segment: tm = (lane, lanes, lead, thread, lane spacing, shared array) ---


@_launch.device
def _lane0(tm):
    return tm[0]


@_launch.device
def _lanes(tm):
    return tm[1]


@_launch.device
def _lead(tm):
    return tm[2]


@_launch.device
def _allsum(tm, v):
    return _tree_sum(tm[5], tm[3], tm[0], tm[1], tm[4], v)  # in the shared array's type


@_launch.device
def _allmax(tm, v):
    return _tree_ext(tm[5], tm[3], tm[0], tm[1], tm[4], float64(v), True)


@_launch.device
def _anyof(tm, flag):
    return _tree_sum(tm[5], tm[3], tm[0], tm[1], tm[4], float64(1.0 if flag else 0.0)) > 0


@_launch.device
def _allext(tm, v, big):
    return _tree_ext(tm[5], tm[3], tm[0], tm[1], tm[4], float64(v), big)


@_launch.device
def _allbest(tm, x, xo, xs, best, largest):  # tm[5]: an int64 shared array
    return _tree_best(tm[5], tm[3], tm[0], tm[1], tm[4], best, x, xo, xs,
                      MAX if largest else MIN)


@_launch.device
def _qnan(m):
    return float64(math.nan)


_TEAM = {"lane0": _lane0, "lanes": _lanes, "lead": _lead, "allsum": _allsum,
         "allmax": _allmax, "anyof": _anyof, "allext": _allext, "allbest": _allbest,
         "qnan": _qnan,
         "fexp": _launch._SimMath().exp if _launch.SIM else math.exp}



_launch.bind(R, R.ROW_FUNCTIONS, _TEAM, __name__)  # the row functions: ``<name>_dev``

# --- kernel templates (``f``: the row function) ---------------------------------------------


def _sum_k(x, xo, xs0, xs1, xs2, out, oo, os0, os1, n_o, n_r, n_i, tr, ls, scale, acc):
    sh = cuda.shared.array(NT, ACC)  # noqa: F821  (``acc``'s type: float64 or int64, bound)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    n_out = n_o * n_i
    for base in range(cuda.blockIdx.x * per, n_out, cuda.gridDim.x * per):
        k = _seg_output(base, t, ls, tr)
        live = k < n_out
        o = k // n_i
        i = k - o * n_i
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        f(x, xo + o * xs0 + i * xs2, xs1, n_r if live else 0, out, oo + o * os0 + i * os1,  # noqa: F821
          scale, acc, tm)


def _extreme_k(x, xo, xs0, xs1, xs2, vals, vo, vs0, vs1, idx, io, is0, is1, n_o, n_r, n_i, tr,
               ls, largest, want_idx):
    sh = cuda.shared.array(NT, int64)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    n_out = n_o * n_i
    for base in range(cuda.blockIdx.x * per, n_out, cuda.gridDim.x * per):
        k = _seg_output(base, t, ls, tr)
        live = k < n_out
        o = k // n_i
        i = k - o * n_i
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        f(x, xo + o * xs0 + i * xs2 if live else xo, xs1, n_r if live else 0, largest,  # noqa: F821
          vals, vo + o * vs0 + i * vs1, idx, io + o * is0 + i * is1, want_idx, tm)


def _norm_k(x, xo, xs0, xs1, xs2, out, oo, os0, os1, n_o, n_r, n_i, tr, ls, kind, p):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    n_out = n_o * n_i
    for base in range(cuda.blockIdx.x * per, n_out, cuda.gridDim.x * per):
        k = _seg_output(base, t, ls, tr)
        live = k < n_out
        o = k // n_i
        i = k - o * n_i
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        f(x, xo + o * xs0 + i * xs2, xs1, n_r if live else 0, kind, p, out,  # noqa: F821
          oo + o * os0 + i * os1, tm)


def _softmax_k(x, xo, xs0, xs1, xs2, out, oo, os0, os1, os2, n_o, n_r, n_i, tr, ls, log):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    n_out = n_o * n_i
    for base in range(cuda.blockIdx.x * per, n_out, cuda.gridDim.x * per):
        k = _seg_output(base, t, ls, tr)
        live = k < n_out
        o = k // n_i
        i = k - o * n_i
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        p = xo + o * xs0 + i * xs2 if live else xo
        q = oo + o * os0 + i * os2 if live else oo
        f(x, p, xs1, out, q, os1, n_r if live else 0, log, float64(0), tm)  # noqa: F821


def _softmax_bwd_k(g, go, gs0, gs1, gs2, y, yo, ys0, ys1, ys2, out, oo, os0, os1, os2,
                   n_o, n_r, n_i, tr, ls):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    n_out = n_o * n_i
    for base in range(cuda.blockIdx.x * per, n_out, cuda.gridDim.x * per):
        k = _seg_output(base, t, ls, tr)
        live = k < n_out
        o = k // n_i
        i = k - o * n_i
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        f(g, go + o * gs0 + i * gs2, gs1, y, yo + o * ys0 + i * ys2, ys1,  # noqa: F821
          out, oo + o * os0 + i * os2, os1, n_r if live else 0, float64(0), tm)


def _logsumexp_k(x, xo, xs0, xs1, xs2, out, oo, os0, os1, n_o, n_r, n_i, tr, ls):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    n_out = n_o * n_i
    for base in range(cuda.blockIdx.x * per, n_out, cuda.gridDim.x * per):
        k = _seg_output(base, t, ls, tr)
        live = k < n_out
        o = k // n_i
        i = k - o * n_i
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        p = xo + o * xs0 + i * xs2 if live else xo
        f(x, p, xs1, n_r if live else 0, out, oo + o * os0 + i * os1, float64(0), tm)  # noqa: F821


def _layer_norm_k(x, xo, xs0, xs1, xs2, gam, gmo, gms, bet, bo, bs, out, oo, os0, os1, os2,
                  mean, mo, ms, rstd, ro, rs, n_o, n_r, n_i, tr, ls, eps):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    for base in range(cuda.blockIdx.x * per, n_o, cuda.gridDim.x * per):
        r = base + t % ls + (t // (ls * tr)) * ls
        live = r < n_o
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        f(x, xo + r * xs0, xs1, gam, gmo, gms, bet, bo, bs, eps, n_r if live else 0,  # noqa: F821
          out, oo + r * os0, os1, mean, mo + r * ms, rstd, ro + r * rs, float64(0), tm)


def _layer_norm_bwd_k(g, go, gs0, gs1, gs2, x, xo, xs0, xs1, xs2, mean, mo, ms, rstd, ro, rs,
                      gam, gmo, gms, gx, gxo, gxs0, gxs1, gxs2, n_o, n_r, n_i, tr, ls):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    for base in range(cuda.blockIdx.x * per, n_o, cuda.gridDim.x * per):
        r = base + t % ls + (t // (ls * tr)) * ls
        live = r < n_o
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        rr = r if live else 0
        f(g, go + r * gs0, gs1, x, xo + r * xs0, xs1, mean[mo + rr * ms],  # noqa: F821
          rstd[ro + rr * rs], gam, gmo, gms, n_r if live else 0, gx, gxo + r * gxs0, gxs1,
          float64(0), tm)


_TILE = 32  # features per block of the layer-norm parameter gradients


def _layer_norm_params_k(g, go, gs0, gs1, x, xo, xs0, xs1, mean, mo, ms, rstd, ro, rs, n_m, n_k,
                         gg, ggo, ggs, gb, gbo, gbs):
    """A block per tile of 32 features: a thread per (feature, every parts-th row), partials
    in registers (one-slot local arrays), then summed over the parts in shared memory (the
    parts of a feature are a team, ``_TILE`` threads apart)."""
    sh = cuda.shared.array(NT, float64)
    acc_g = cuda.local.array(1, float64)
    acc_b = cuda.local.array(1, float64)
    t = cuda.threadIdx.x
    lane = t % _TILE  # the feature within the tile: coalesced reads along a row
    part = t // _TILE
    parts = cuda.blockDim.x // _TILE
    for tile in range(cuda.blockIdx.x, (n_k + _TILE - 1) // _TILE, cuda.gridDim.x):
        k = tile * _TILE + lane
        acc_g[0] = 0
        acc_b[0] = 0
        if k < n_k:
            f(g, go, gs0, gs1, x, xo, xs0, xs1, mean, mo, ms, rstd, ro, rs, part, n_m,  # noqa: F821
              parts, k, k + 1, acc_g, acc_b, -k)
        sg = _tree_sum(sh, t, part, parts, _TILE, acc_g[0])
        sb = _tree_sum(sh, t, part, parts, _TILE, acc_b[0])
        if part == 0 and k < n_k:
            gg[ggo + k * ggs] = sg
            gb[gbo + k * gbs] = sb


def _nll_k(logp, lo, ls0, ls1, target, to, ts, weight, wo, ws, ignore_index, n_c,
           losses, so, ss, weights, wto, wts, bad, n):
    for r in range(cuda.grid(1), n, cuda.gridsize(1)):
        if f(logp, lo + r * ls0, ls1, target[to + r * ts], weight, wo, ws,  # noqa: F821
             ignore_index, n_c, losses, so + r * ss, weights, wto + r * wts):
            cuda.atomic.min(bad, 0, r)


def _nll_bwd_k(gl, glo, gls, per_sample, target, to, ts, weights, wo, ws, scale,
               out, oo, os0, os1, os2, n_o, n_r, n_i, tr, ls):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    lane = (t // ls) % tr
    per = cuda.blockDim.x // tr
    for base in range(cuda.blockIdx.x * per, n_o, cuda.gridDim.x * per):
        r = base + t % ls + (t // (ls * tr)) * ls
        live = r < n_o
        tm = (lane, tr, live and lane == 0, t, ls, sh)
        rr = r if live else 0
        gv = gl[glo + rr * gls] if per_sample else gl[glo]
        f(gv, target[to + rr * ts], weights[wo + rr * ws], scale, out, oo + r * os0,  # noqa: F821
          os1, n_r if live else 0, tm)


# --- batch norm: a block per channel (its n_b planes of n_l elements) ---------------------


def _bn_stats_k(x, xo, xs0, xs1, xs2, n_b, n_c, n_l, eps, mean, mo, ms, var, vo, vs, inv, io,
                is_):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    tm = (t, cuda.blockDim.x, t == 0, t, 1, sh)
    for c in range(cuda.blockIdx.x, n_c, cuda.gridDim.x):
        f(x, xo + c * xs1, xs0, xs2, n_b, n_l, eps, mean, mo + c * ms, var, vo + c * vs,  # noqa: F821
          inv, io + c * is_, float64(0), tm)


def _bn_apply_k(x, xo, xs0, xs1, xs2, mean, mo, ms, inv, io, is_, gam, go, gs, bet, bo, bs,
                out, oo, os0, os1, os2, n_b, n_c, n_l):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    tm = (t, cuda.blockDim.x, t == 0, t, 1, sh)
    for c in range(cuda.blockIdx.x, n_c, cuda.gridDim.x):
        f(x, xo + c * xs1, xs0, xs2, n_b, n_l, mean[mo + c * ms], inv[io + c * is_],  # noqa: F821
          gam[go + c * gs], bet[bo + c * bs], out, oo + c * os1, os0, os2, tm)


def _bn_sums_k(g, go, gs0, gs1, gs2, x, xo, xs0, xs1, xs2, mean, mo, ms, inv, io, is_,
               sg, sgo, sgs, sx, sxo, sxs, n_b, n_c, n_l):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    tm = (t, cuda.blockDim.x, t == 0, t, 1, sh)
    for c in range(cuda.blockIdx.x, n_c, cuda.gridDim.x):
        f(g, go + c * gs1, gs0, gs2, x, xo + c * xs1, xs0, xs2, n_b, n_l,  # noqa: F821
          mean[mo + c * ms], inv[io + c * is_], sg, sgo + c * sgs, sx, sxo + c * sxs,
          float64(0), tm)


def _bn_bwd_k(g, go, gs0, gs1, gs2, x, xo, xs0, xs1, xs2, mean, mo, ms, inv, io, is_,
              gam, gmo, gms, sg, sgo, sgs, sx, sxo, sxs, gx, gxo, gxs0, gxs1, gxs2,
              n_b, n_c, n_l, training):
    sh = cuda.shared.array(NT, float64)
    t = cuda.threadIdx.x
    tm = (t, cuda.blockDim.x, t == 0, t, 1, sh)
    for c in range(cuda.blockIdx.x, n_c, cuda.gridDim.x):
        f(g, go + c * gs1, gs0, gs2, x, xo + c * xs1, xs0, xs2, n_b, n_l,  # noqa: F821
          mean[mo + c * ms], inv[io + c * is_], gam[gmo + c * gms], sg[sgo + c * sgs],
          sx[sxo + c * sxs], n_b * n_l, training, gx, gxo + c * gxs1, gxs0, gxs2, tm)


def _running_k(a, ao, as_, b, bo, bs, s0, s1, n):
    """One row of n channels, a thread per channel (grid-stride; no combines)."""
    tm = (cuda.grid(1), cuda.gridsize(1), False, 0, 1, 0)
    f(a, ao, as_, b, bo, bs, s0, s1, n, tm)  # noqa: F821


def _inv_std_k(a, ao, as_, s0, b, bo, bs, n):
    tm = (cuda.grid(1), cuda.gridsize(1), False, 0, 1, 0)
    f(a, ao, as_, s0, b, bo, bs, n, tm)  # noqa: F821


_K = {}


def _kernel(template, row, acc=None):
    """``template`` with row function ``row`` bound (and, for the sums, ``ACC``: the name of
    the accumulator's type, that of the team's shared array)."""
    k = _K.get((template, row, acc))
    if k is None:
        bind = {"f": globals()[row + "_dev"]}
        if acc is not None:
            bind["ACC"] = acc
        k = _K[(template, row, acc)] = _launch.kernel(
            template, row if acc is None else f"{row}_{acc}", **bind)
    return k


def acc_zero(x):
    """The zero of the accumulator of a sum of ``x`` (float64 for floats, else int64)."""
    return np.float64(0) if x.dtype.kind == "f" else np.int64(0)


# --- launchers (the CPU module's names and arguments) ---------------------------------------


def _3d(a):
    """2-D rows as (rows, n, 1)."""
    return from_any(a)[:, :, None]


def sum_3d(x, out, scale):
    """out[o, i] = scale * sum_r x[o, r, i] (float inputs accumulate in float64, others in
    int64)."""
    x, out = from_any(x), from_any(out)
    if not out.size:
        return
    acc = acc_zero(x)
    if acc.dtype.kind == "f" or isinstance(scale, (float, np.floating)):
        scale = np.float64(scale)
    else:
        scale = np.int64(scale)
    _rows(_kernel(_sum_k, "sum_row", acc.dtype.name), x, _geom(x) + _geom(out), (scale, acc))


def extreme_3d(x, out, largest):
    """out[o, i] = max_r (or min_r) x[o, r, i]; nan wins, as in PyTorch."""
    x, out = from_any(x), from_any(out)
    if out.size and x.shape[1]:
        _rows(_kernel(_extreme_k, "extreme_row"), x, _geom(x) + _geom(out) + _geom(out),
              (bool(largest), False))


def extreme_index_3d(x, values, indices, largest):
    """Values and first indices of the max (or min) along r; nan wins."""
    x, values, indices = from_any(x), from_any(values), from_any(indices)
    if values.size and x.shape[1]:
        _rows(_kernel(_extreme_k, "extreme_row"), x, _geom(x) + _geom(values) + _geom(indices),
              (bool(largest), True))


_NORM_KIND = {2.0: R.P2, 1.0: R.P1, 0.0: R.P0, math.inf: R.PINF, -math.inf: R.PNEGINF}


def norm_3d(x, out, p):
    """out[o, i] = (sum_r |x|^p)^(1/p), with p in {0, 1, 2, inf, -inf} special-cased."""
    x, out = from_any(x), from_any(out)
    if out.size:
        p = float(p)
        _rows(_kernel(_norm_k, "norm_row"), x, _geom(x) + _geom(out),
              (_NORM_KIND.get(p, R.PGEN), np.float64(p)))


def softmax_3d(x, out, log):
    """softmax (or log_softmax) along axis 1 of 3-D ``x``."""
    x, out = from_any(x), from_any(out)
    if out.size:
        _rows(_kernel(_softmax_k, "softmax_row"), x, _geom(x) + _geom(out), (bool(log),))


def softmax_rows(x, out, log):
    """softmax (or log_softmax) along the last dim of 2-D ``x``."""
    softmax_3d(_3d(x), _3d(out), log)


def _bwd_3d(g, y, out, log):
    g, y, out = from_any(g), from_any(y), from_any(out)
    if out.size:
        row = "log_softmax_bwd_row" if log else "softmax_bwd_row"
        _rows(_kernel(_softmax_bwd_k, row), y, _geom(g) + _geom(y) + _geom(out))


# d softmax: gx = y (g - sum g y)
def softmax_bwd_3d(g, y, out):
    _bwd_3d(g, y, out, False)


# d log_softmax: gx = g - e^y sum g
def log_softmax_bwd_3d(g, y, out):
    _bwd_3d(g, y, out, True)


# d softmax: gx = y (g - sum g y), along the last dim of 2-D g and y
def softmax_bwd_rows(g, y, out):
    _bwd_3d(_3d(g), _3d(y), _3d(out), False)


# d log_softmax: gx = g - e^y sum g, along the last dim of 2-D g and y
def log_softmax_bwd_rows(g, y, out):
    _bwd_3d(_3d(g), _3d(y), _3d(out), True)


def logsumexp_3d(x, out):
    """out[o, i] = m + log sum_r e^(x - m), m = max_r x (inf-safe; nan if any is)."""
    x, out = from_any(x), from_any(out)
    if out.size:
        if not x.shape[1]:  # an empty row still reads x[xo]
            x = CudaArray.empty((1,), x.dtype).as_strided((x.shape[0], 0, x.shape[2]),
                                                          (0, 0, 0))
        _rows(_kernel(_logsumexp_k, "logsumexp_row"), x, _geom(x) + _geom(out))


def along(x, dim, out_dtype, log):
    """softmax (or log_softmax) of ``x`` along ``dim``: a new array of x's shape."""
    x = from_any(x)
    out = CudaArray.empty(x.shape, out_dtype)
    if x.size:
        x3 = as3d(x, dim, dim + 1)
        softmax_3d(x3, out.reshape(x3.shape), log)
    return out


def along2(g, y, dim, out_dtype, log):
    """The softmax (or log_softmax) backward along ``dim`` of same-shaped ``g`` and ``y``."""
    g, y = from_any(g), from_any(y)
    out = CudaArray.empty(y.shape, out_dtype)
    if y.size:
        y3 = as3d(y, dim, dim + 1)
        _bwd_3d(as3d(g, dim, dim + 1), y3, out.reshape(y3.shape), log)
    return out


def layer_norm_fwd(x, gamma, beta, eps, out, mean, rstd):
    """Per row of x (M, K): mean, 1/sqrt(var + eps), and the normalized, affine output."""
    x3 = _3d(x)
    if x3.shape[0]:
        _rows(_kernel(_layer_norm_k, "layer_norm_row"), x3,
              _geom(x3) + vec(gamma) + vec(beta) + _geom(_3d(out)) + vec(mean) + vec(rstd),
              (np.float64(eps),))


# d/dx layer_norm = rstd (g gamma - mean(g gamma) - xhat mean(g gamma xhat)), per row
def layer_norm_bwd_input(g, x, mean, rstd, gamma, gx):
    x3 = _3d(x)
    if x3.shape[0]:
        _rows(_kernel(_layer_norm_bwd_k, "layer_norm_bwd_row"), x3,
              _geom(_3d(g)) + _geom(x3) + vec(mean) + vec(rstd) + vec(gamma) + _geom(_3d(gx)))


# d gamma = sum_rows g xhat, d beta = sum_rows g (per feature)
def layer_norm_bwd_params(g, x, mean, rstd, ggamma, gbeta):
    """d gamma = sum over rows of g xhat, d beta = sum of g (float64 partials)."""
    g, x = from_any(g), from_any(x)
    n_m, n_k = x.shape
    tiles = (n_k + _TILE - 1) // _TILE
    _launch.launch_blocks(_kernel(_layer_norm_params_k, "layer_norm_params_tile"),
                          min(tiles, _launch.MAX_BLOCKS), _launch.THREADS,
                          *_geom(g), *_geom(x), *vec(mean), *vec(rstd), n_m, n_k,
                          *vec(ggamma), *vec(gbeta))


def nll(logp, target, weight, ignore_index, losses, weights):
    """losses[n] = -w[t] logp[n, t], weights[n] = w[t] (0 for ignored); returns the first
    out-of-range target's position or -1."""
    logp = from_any(logp)
    n_b, n_c = logp.shape
    if n_b == 0:
        return -1
    bad = device_int(n_b)
    _launch.launch(_kernel(_nll_k, "nll_row"), n_b, *_geom(logp), *vec(target), *vec(weight),
                   int(ignore_index), n_c, *vec(losses), *vec(weights), bad.buf, n_b)
    return first_found(bad, n_b)


# d/dlogp nll = -w_n gl_n scale at [n, t_n], 0 elsewhere
def nll_bwd(gl, target, weights, scale, out):
    """out = 0; out[n, t_n] = -w_n gl_n scale (gl has one entry, or one per sample)."""
    gl, out3 = from_any(gl).reshape(-1), _3d(out)
    if out3.size:
        _rows(_kernel(_nll_bwd_k, "nll_bwd_row"), out3,
              vec(gl) + (gl.size > 1,) + vec(target) + vec(weights) + (np.float64(scale),)
              + _geom(out3))


# --- batch norm: a block per channel of x (N, C, L) -------------------------------------


def _bn_blocks(n_c):
    return min(n_c, _launch.MAX_BLOCKS)


def channel_stats(x, eps, mean, var, invstd):
    """Mean, biased variance and 1/sqrt(var + eps) of x (N, C, L) per channel (two passes)."""
    x = from_any(x)
    n_b, n_c, n_l = x.shape
    if n_c:
        _launch.launch_blocks(_kernel(_bn_stats_k, "batch_norm_stats_row"), _bn_blocks(n_c),
                              _launch.THREADS, *_geom(x), n_b, n_c, n_l, np.float64(eps),
                              *vec(mean), *vec(var), *vec(invstd))


def inv_std(var, eps, out):
    var = from_any(var)
    if var.size:
        _launch.launch(_kernel(_inv_std_k, "inv_std_row"), var.size, *vec(var),
                       np.float64(eps), *vec(out), var.size)


def running_update(running, stat, momentum, scale):
    """running = (1 - momentum) running + momentum * scale * stat (batch norm's averages)."""
    running = from_any(running)
    if running.size:
        _launch.launch(_kernel(_running_k, "running_update_row"), running.size,
                       *vec(running.reshape(-1, copy=False)), *vec(stat), np.float64(momentum),
                       np.float64(scale), running.size)


def batch_norm_apply(x, mean, invstd, gamma, beta, out):
    """out = (x - mean) * invstd * gamma + beta per channel."""
    x, out = from_any(x), from_any(out)
    n_b, n_c, n_l = x.shape
    if x.size:
        _launch.launch_blocks(_kernel(_bn_apply_k, "batch_norm_apply_row"), _bn_blocks(n_c),
                              _launch.THREADS, *_geom(x), *vec(mean), *vec(invstd), *vec(gamma),
                              *vec(beta), *_geom(out), n_b, n_c, n_l)


# d beta = sum g, d gamma = sum g xhat (per channel, over batch and space)
def batch_norm_bwd_sums(g, x, mean, invstd, sum_g, sum_gxhat):
    """Per channel: sum g and sum g * xhat (xhat = (x - mean) * invstd)."""
    g, x = from_any(g), from_any(x)
    n_b, n_c, n_l = x.shape
    if n_c:
        _launch.launch_blocks(_kernel(_bn_sums_k, "batch_norm_sums_row"), _bn_blocks(n_c),
                              _launch.THREADS, *_geom(g), *_geom(x), *vec(mean), *vec(invstd),
                              *vec(sum_g), *vec(sum_gxhat), n_b, n_c, n_l)


# d/dx batch_norm (train) = gamma invstd / M (M g - sum g - xhat sum(g xhat))
def batch_norm_bwd_input(g, x, mean, invstd, gamma, sum_g, sum_gxhat, training, gx):
    g, x, gx = from_any(g), from_any(x), from_any(gx)
    n_b, n_c, n_l = x.shape
    if x.size:
        _launch.launch_blocks(_kernel(_bn_bwd_k, "batch_norm_bwd_row"), _bn_blocks(n_c),
                              _launch.THREADS, *_geom(g), *_geom(x), *vec(mean), *vec(invstd),
                              *vec(gamma), *vec(sum_g), *vec(sum_gxhat), *_geom(gx), n_b, n_c,
                              n_l, bool(training))
