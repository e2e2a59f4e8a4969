"""Kernels for numgrad.nn on the GPU: the twin of ``numgrad.kernels.cpu.nn``.

Why a second source: the CPU side builds convolutions on one BLAS GEMM over im2col columns
and reduces statistics with one thread per channel; on the GPU the same math needs one
thread per output element, shared-memory tree reductions and atomics, a different algorithm
rather than the same loop on another device.

Same names and arguments as the CPU module, over ``CudaArray`` data:

* im2col writes one column element per thread; col2im (its adjoint) is a gather, one thread
  per input pixel summing the column entries that read it, in the CPU's order (no atomics,
  bit-for-bit the CPU's sums).
* Pooling windows, layer norm (rows and parameter gradients) and the NLL rows are written
  once for both devices (``numgrad.kernels.windows``, ``numgrad.kernels.rows``): their names
  here are those modules' launchers.
* Batch norm's per-channel statistics are block reductions: one block per channel, a
  float64 shared-memory tree.
* ``first_outside`` finds the first bad position with an atomic min and copies that one
  value to the host.
* The SGD, Adam and RMSprop steps are those of ``numgrad.kernels.cuda.optim`` (written once
  for both devices in ``numgrad.kernels.optim_steps``), named here for ``NN.on(p)``.

Every array is passed as (flat buffer, element offset, element strides), so strided views
need no copies. Accumulators are float64 (``float64(0)``, which also keeps the simulator's
NumPy scalars in float64) exactly where the CPU kernels accumulate in float64.
"""

import math

import numpy as np
from numba import cuda, float64

from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda import rows as ROWS
from numgrad.kernels.cuda import windows as WIN
from numgrad.kernels.cuda.array import from_any
from numgrad.kernels.cuda.optim import adam_step, rmsprop_step, sgd_step  # noqa: F401

_RT = _launch.THREADS  # threads per block of the block reductions (a power of two, >= 32)
_MAX_ROW_BLOCKS = 2 if _launch.SIM else 8192  # blocks of the per-channel/row reductions


def pick(serial, parallel, work):
    """One GPU variant: the first argument (each ``*_par`` name is an alias of it)."""
    return serial


def _nd(a):
    """(buffer, offset, element strides) of a CudaArray."""
    a = from_any(a)
    return a.buf, a.offset, a.strides_el


def _v(a):
    """(buffer, offset, element stride) of a 1-D CudaArray."""
    a = from_any(a)
    return a.buf, a.offset, a.strides_el[0] if a.strides_el else 1


def _row_blocks(n):
    return min(n, _MAX_ROW_BLOCKS)


# ----------------------------------------------------------------------------------------
# block reductions (device functions: defined before the kernels that use them)
# ----------------------------------------------------------------------------------------


@_launch.device
def _block_sum(sh, v):
    """Sum of ``v`` over the block (blockDim a power of two); every thread gets it."""
    t = cuda.threadIdx.x
    sh[t] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            sh[t] += sh[t + s]
        cuda.syncthreads()
        s //= 2
    r = sh[0]
    cuda.syncthreads()  # sh may be reused once everyone has read the total
    return r


@_launch.device
def _block_sum2(sa, sb, a, b):
    """The block sums of ``a`` and of ``b`` in one tree."""
    t = cuda.threadIdx.x
    sa[t] = a
    sb[t] = b
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            sa[t] += sa[t + s]
            sb[t] += sb[t + s]
        cuda.syncthreads()
        s //= 2
    ra = sa[0]
    rb = sb[0]
    cuda.syncthreads()
    return ra, rb


# ========================================================================================
# convolution: unfold (im2col) and its adjoint fold (col2im)
# ========================================================================================


@_launch.jit
def _im2col_k(x, xo, xs, n_c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols, co, cs, n):
    n_l = oh * ow
    n_k = n_c * kh * kw
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, row, col = _launch.unravel3(t, n_k, n_l)
        xo_ = col % ow
        yo = col // ow
        j = row % kw
        q = row // kw
        i = q % kh
        c = q // kh
        iy = yo * sh - ph + i * dh
        ix = xo_ * sw - pw + j * dw
        dst = co + b * cs[0] + row * cs[1] + col * cs[2]
        if iy >= 0 and iy < h and ix >= 0 and ix < w:
            cols[dst] = x[xo + b * xs[0] + c * xs[1] + iy * xs[2] + ix * xs[3]]
        else:
            cols[dst] = 0


def im2col(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols):
    """cols[n, (c*kh + i)*kw + j, y*ow + x] = x[n, c, y*sh - ph + i*dh, x*sw - pw + j*dw] (0 out
    of bounds); ``cols`` may be a strided view (the k-major layout)."""
    x, cols = from_any(x), from_any(cols)
    n_c, h, w = x.shape[1], x.shape[2], x.shape[3]
    xb, xo, xs = _nd(x)
    cb, co, cs = _nd(cols)
    _launch.launch(_im2col_k, cols.size, xb, xo, xs, n_c, h, w, kh, kw, sh, sw, ph, pw, dh, dw,
                   oh, ow, cb, co, cs, cols.size)


# d/dcols <x, col2im(cols)> = im2col: each pixel sums the column entries that copied it
@_launch.jit
def _col2im_k(cols, co, cs, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, n_c, h, w, x, xo, xs, zero,
              n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, iy, ix = _launch.unravel4(t, n_c, h, w)
        acc = zero
        base = co + b * cs[0]
        for i in range(kh):
            ty = iy + ph - i * dh
            if ty < 0 or ty % sh != 0:
                continue
            yo = ty // sh
            if yo >= oh:
                continue
            for j in range(kw):
                tx = ix + pw - j * dw
                if tx < 0 or tx % sw != 0:
                    continue
                xc = tx // sw
                if xc >= ow:
                    continue
                acc += cols[base + ((c * kh + i) * kw + j) * cs[1] + (yo * ow + xc) * cs[2]]
        x[xo + b * xs[0] + c * xs[1] + iy * xs[2] + ix * xs[3]] = acc


def col2im(cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, x):
    """x = 0; x[n, c, iy, ix] += cols[...]: the adjoint of im2col (cols of any strides)."""
    cols, x = from_any(cols), from_any(x)
    n_c, h, w = x.shape[1], x.shape[2], x.shape[3]
    cb, co, cs = _nd(cols)
    xb, xo, xs = _nd(x)
    _launch.launch(_col2im_k, x.size, cb, co, cs, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow,
                   n_c, h, w, xb, xo, xs, _launch.scalar(x.dtype, 0), x.size)


im2col_par = im2col
col2im_par = col2im

# ========================================================================================
# pooling
# ========================================================================================


# the pooling windows are written once for both devices (``numgrad.kernels.windows``)
max_pool2d = max_pool2d_par = WIN.max_pool2d
max_pool2d_bwd = max_pool2d_bwd_par = WIN.max_pool2d_bwd
max_pool2d_gather = WIN.max_pool2d_gather
avg_pool2d = avg_pool2d_par = WIN.avg_pool2d


avg_pool2d_bwd = avg_pool2d_bwd_par = WIN.avg_pool2d_bwd

# ========================================================================================
# normalization: statistics over (N, L) per channel (batch norm) or per row (layer norm)
# ========================================================================================


@_launch.jit
def _channel_stats_k(x, xo, xs, n_b, n_c, n_l, eps, mean, mo, ms, var, vo, vs, inv, io, is_):
    sh = cuda.shared.array(_RT, float64)
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    m = n_b * n_l
    for c in range(cuda.blockIdx.x, n_c, cuda.gridDim.x):
        base = xo + c * xs[1]
        s = float64(0)
        for e in range(tid, m, nt):
            b = e // n_l
            s += x[base + b * xs[0] + (e - b * n_l) * xs[2]]
        mu = _block_sum(sh, s) / m
        ss = float64(0)
        for e in range(tid, m, nt):
            b = e // n_l
            d = x[base + b * xs[0] + (e - b * n_l) * xs[2]] - mu
            ss += d * d
        ss = _block_sum(sh, ss)
        if tid == 0:
            mean[mo + c * ms] = mu
            var[vo + c * vs] = ss / m
            inv[io + c * is_] = 1.0 / math.sqrt(ss / m + eps)


def channel_stats(x, eps, mean, var, invstd):
    """Mean, biased variance and 1/sqrt(var + eps) of x (N, C, L) per channel (two passes)."""
    x = from_any(x)
    n_b, n_c, n_l = x.shape
    _launch.launch_blocks(_channel_stats_k, _row_blocks(n_c), _RT, *_nd(x), n_b, n_c, n_l,
                          np.float64(eps), *_v(mean), *_v(var), *_v(invstd))


@_launch.jit
def _inv_std_k(var, vo, vs, eps, out, oo, os, n):
    for c in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[oo + c * os] = 1.0 / math.sqrt(var[vo + c * vs] + eps)


def inv_std(var, eps, out):
    var = from_any(var)
    _launch.launch(_inv_std_k, var.size, *_v(var), np.float64(eps), *_v(out), var.size)


@_launch.jit
def _running_update_k(run, ro, rs, stat, so, ss, momentum, scale, n):
    for c in range(cuda.grid(1), n, cuda.gridsize(1)):
        j = ro + c * rs
        run[j] = (1.0 - momentum) * run[j] + momentum * scale * stat[so + c * ss]


def running_update(running, stat, momentum, scale):
    """running = (1 - momentum) running + momentum * scale * stat (batch norm's averages)."""
    running = from_any(running)
    _launch.launch(_running_update_k, running.size, *_v(running.reshape(-1, copy=False)),
                   *_v(stat), np.float64(momentum), np.float64(scale), running.size)


@_launch.jit
def _first_outside_k(x, xo, xs, lo, hi, res, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        v = x[xo + i * xs]
        if not (v >= lo and v <= hi):
            cuda.atomic.min(res, 0, i)


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def first_outside(x, lo, hi):
    """Position of the first element outside [lo, hi] (nan counts as outside), or -1."""
    x = from_any(x)
    n = x.size
    if n == 0:
        return -1
    res = ROWS.first_buffer(n)
    _launch.launch(_first_outside_k, n, *_v(x.reshape(-1)), _py(lo), _py(hi), res.buf, n)
    return ROWS.first_result(res, n)


@_launch.jit
def _bn_apply_k(x, xo, xs, mean, mo, ms, inv, io, is_, gam, go, gs, bet, bo, bs, n_c, n_l,
                out, oo, os, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, k = _launch.unravel3(t, n_c, n_l)
        a = inv[io + c * is_] * gam[go + c * gs]
        sh = bet[bo + c * bs] - mean[mo + c * ms] * a
        out[oo + b * os[0] + c * os[1] + k * os[2]] = \
            x[xo + b * xs[0] + c * xs[1] + k * xs[2]] * a + sh


def batch_norm_apply(x, mean, invstd, gamma, beta, out):
    """out = (x - mean) * invstd * gamma + beta per channel."""
    x, out = from_any(x), from_any(out)
    n_c, n_l = x.shape[1], x.shape[2]
    _launch.launch(_bn_apply_k, x.size, *_nd(x), *_v(mean), *_v(invstd), *_v(gamma), *_v(beta),
                   n_c, n_l, *_nd(out), x.size)


# d beta = sum g, d gamma = sum g xhat (per channel, over batch and space)
@_launch.jit
def _bn_bwd_sums_k(g, go, gs, x, xo, xs, mean, mo, ms, inv, io, is_, n_b, n_c, n_l,
                   sg, sgo, sgs, sx, sxo, sxs):
    sa = cuda.shared.array(_RT, float64)
    sb = cuda.shared.array(_RT, float64)
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    m = n_b * n_l
    for c in range(cuda.blockIdx.x, n_c, cuda.gridDim.x):
        mu = mean[mo + c * ms]
        s1 = float64(0)
        s2 = float64(0)
        for e in range(tid, m, nt):
            b = e // n_l
            k = e - b * n_l
            gv = g[go + b * gs[0] + c * gs[1] + k * gs[2]]
            s1 += gv
            s2 += gv * (x[xo + b * xs[0] + c * xs[1] + k * xs[2]] - mu)
        s1, s2 = _block_sum2(sa, sb, s1, s2)
        if tid == 0:
            sg[sgo + c * sgs] = s1
            sx[sxo + c * sxs] = s2 * inv[io + c * is_]


def batch_norm_bwd_sums(g, x, mean, invstd, sum_g, sum_gxhat):
    """Per channel: sum g and sum g * xhat (xhat = (x - mean) * invstd)."""
    g, x = from_any(g), from_any(x)
    n_b, n_c, n_l = x.shape
    _launch.launch_blocks(_bn_bwd_sums_k, _row_blocks(n_c), _RT, *_nd(g), *_nd(x), *_v(mean),
                          *_v(invstd), n_b, n_c, n_l, *_v(sum_g), *_v(sum_gxhat))


# d/dx batch_norm (train) = gamma invstd / M (M g - sum g - xhat sum(g xhat))
@_launch.jit
def _bn_bwd_input_k(g, go, gs, x, xo, xs, mean, mo, ms, inv, io, is_, gam, gmo, gms,
                    sg, sgo, sgs, sx, sxo, sxs, training, n_c, n_l, m, gx, gxo, gxs, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, k = _launch.unravel3(t, n_c, n_l)
        iv = inv[io + c * is_]
        a = gam[gmo + c * gms] * iv
        gv = g[go + b * gs[0] + c * gs[1] + k * gs[2]]
        dst = gxo + b * gxs[0] + c * gxs[1] + k * gxs[2]
        if training:
            xhat = (x[xo + b * xs[0] + c * xs[1] + k * xs[2]] - mean[mo + c * ms]) * iv
            gx[dst] = a * (gv - sg[sgo + c * sgs] / m - xhat * sx[sxo + c * sxs] / m)
        else:
            gx[dst] = a * gv


def batch_norm_bwd_input(g, x, mean, invstd, gamma, sum_g, sum_gxhat, training, gx):
    g, x, gx = from_any(g), from_any(x), from_any(gx)
    n_b, n_c, n_l = x.shape
    _launch.launch(_bn_bwd_input_k, x.size, *_nd(g), *_nd(x), *_v(mean), *_v(invstd),
                   *_v(gamma), *_v(sum_g), *_v(sum_gxhat), bool(training), n_c, n_l, n_b * n_l,
                   *_nd(gx), x.size)


batch_norm_apply_par = batch_norm_apply
batch_norm_bwd_input_par = batch_norm_bwd_input


# layer norm's rows and parameter gradients: written once for both devices
# (``numgrad.kernels.rows``)
layer_norm_fwd = layer_norm_fwd_par = ROWS.layer_norm_fwd
layer_norm_bwd_input = layer_norm_bwd_input_par = ROWS.layer_norm_bwd_input


layer_norm_bwd_params = ROWS.layer_norm_bwd_params


# ========================================================================================
# losses over class indices: written once for both devices (``numgrad.kernels.rows``)
# ========================================================================================

nll = ROWS.nll
nll_bwd = ROWS.nll_bwd
