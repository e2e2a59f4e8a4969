"""Kernels for numgrad.nn on the GPU: the twin of ``numgrad.kernels.cpu.nn``.

Why a second source: the CPU side builds convolutions on one BLAS GEMM over im2col columns
and reduces statistics with one thread per channel; on the GPU the same math needs one
thread per output element, shared-memory tree reductions and atomics, a different algorithm
rather than the same loop on another device.

Same names and arguments as the CPU module, over ``CudaArray`` data:

* im2col writes one column element per thread; col2im (its adjoint) is a gather, one thread
  per input pixel summing the column entries that read it, in the CPU's order (no atomics,
  bit-for-bit the CPU's sums).
* Pooling windows, batch norm (a block per channel), layer norm (rows and parameter
  gradients) and the NLL rows are written once for both devices (``numgrad.kernels.windows``,
  ``numgrad.kernels.rows``): their names here are those modules' launchers.
* ``first_outside`` finds the first bad position with an atomic min and copies that one
  value to the host.
* The SGD, Adam and RMSprop steps are those of ``numgrad.kernels.cuda.optim`` (written once
  for both devices in ``numgrad.kernels.optim_steps``), named here for ``NN.on(p)``.

Every array is passed as (flat buffer, element offset, element strides), so strided views
need no copies. Accumulators are float64 (``float64(0)``, which also keeps the simulator's
NumPy scalars in float64) exactly where the CPU kernels accumulate in float64.
"""


import numpy as np
from numba import cuda

from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda import rows as ROWS
from numgrad.kernels.cuda import windows as WIN
from numgrad.kernels.cuda.array import from_any
from numgrad.kernels.cuda.optim import adam_step, rmsprop_step, sgd_step  # noqa: F401


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
avg_pool2d = avg_pool2d_par = WIN.avg_pool2d


avg_pool2d_bwd = avg_pool2d_bwd_par = WIN.avg_pool2d_bwd

# ========================================================================================
# normalization: statistics over (N, L) per channel (batch norm) or per row (layer norm)
# ========================================================================================


# batch norm: a block per channel, written once for both devices (``numgrad.kernels.rows``)
channel_stats = ROWS.channel_stats
inv_std = ROWS.inv_std
running_update = ROWS.running_update
batch_norm_apply = batch_norm_apply_par = ROWS.batch_norm_apply
batch_norm_bwd_sums = ROWS.batch_norm_bwd_sums
batch_norm_bwd_input = batch_norm_bwd_input_par = ROWS.batch_norm_bwd_input


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
