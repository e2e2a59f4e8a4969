"""Kernels for numgrad.nn on the GPU: the names and arguments of ``numgrad.kernels.cpu.nn``,
over ``CudaArray`` data, each launching functions written once for both devices:

* im2col (a column entry per thread), col2im (a pixel per thread, summing the column entries
  that read it in the CPU's order: no atomics, bit-for-bit the CPU's sums) and the pooling
  windows (``numgrad.kernels.windows``, launched by ``numgrad.kernels.cuda.windows``);
* batch norm (a block per channel), layer norm (rows and parameter gradients) and the NLL
  rows (``numgrad.kernels.rows``, launched by ``numgrad.kernels.cuda.rows``);
* ``first_outside`` (``first_outside_run`` of ``numgrad.kernels.gathers``, a thread per
  element) finds the first bad position with an atomic min and copies that one value to
  the host;
* the SGD, Adam and RMSprop steps are those of ``numgrad.kernels.cuda.optim`` (written once
  for both devices in ``numgrad.kernels.optim_steps``), named here for ``NN.on(p)``.

Where the CPU picks a serial or a multithreaded loop (``pick``), the GPU has one launcher:
each ``*_par`` name is an alias of it.
"""


import numpy as np
from numba import cuda

from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda import rows as ROWS
from numgrad.kernels.cuda import windows as WIN
from numgrad.kernels.cuda.array import from_any
from numgrad.kernels.cuda.indexing import first_outside_run_dev
from numgrad.kernels.cuda.optim import adam_step, rmsprop_step, sgd_step  # noqa: F401


def pick(serial, parallel, work):
    """One GPU variant: the first argument (each ``*_par`` name is an alias of it)."""
    return serial


def _v(a):
    """(buffer, offset, element stride) of a 1-D CudaArray."""
    a = from_any(a)
    return a.buf, a.offset, a.strides_el[0] if a.strides_el else 1


# ========================================================================================
# convolution: unfold (im2col) and its adjoint fold (col2im)
# ========================================================================================


# the column rows and pixels are window functions written once for both devices
# (``numgrad.kernels.windows``, launched by ``numgrad.kernels.cuda.windows``)
im2col = im2col_par = WIN.im2col
col2im = col2im_par = WIN.col2im

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
        if first_outside_run_dev(x, xo, xs, i, i + 1, lo, hi) >= 0:
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
