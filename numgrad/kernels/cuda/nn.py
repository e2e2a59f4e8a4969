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
  for both devices in ``numgrad.kernels.optim_steps``), named here for ``NN.sgd_step``
  (``numgrad.kernels.either_device``).

Where the CPU's launchers pick a serial or a multithreaded loop, the GPU has one launcher.
"""


import numpy as np
from numba import cuda

from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda import rows as ROWS
from numgrad.kernels.cuda import windows as WIN
from numgrad.kernels.cuda.array import from_any, vec
from numgrad.kernels.cuda.indexing import device_int, first_found, first_outside_run_dev
from numgrad.kernels.cuda.optim import adam_step, rmsprop_step, sgd_step  # noqa: F401

# ========================================================================================
# convolution: unfold (im2col) and its adjoint fold (col2im)
# ========================================================================================


# the column rows and pixels are window functions written once for both devices
# (``numgrad.kernels.windows``, launched by ``numgrad.kernels.cuda.windows``)
im2col = WIN.im2col
col2im = WIN.col2im


# ========================================================================================
# pooling
# ========================================================================================


# the pooling windows are written once for both devices (``numgrad.kernels.windows``)
max_pool2d = WIN.max_pool2d
max_pool2d_bwd = WIN.max_pool2d_bwd
avg_pool2d = WIN.avg_pool2d
avg_pool2d_bwd = WIN.avg_pool2d_bwd


# ========================================================================================
# normalization: statistics over (N, L) per channel (batch norm) or per row (layer norm)
# ========================================================================================


# batch norm: a block per channel, written once for both devices (``numgrad.kernels.rows``)
channel_stats = ROWS.channel_stats
inv_std = ROWS.inv_std
running_update = ROWS.running_update
batch_norm_apply = ROWS.batch_norm_apply
batch_norm_bwd_sums = ROWS.batch_norm_bwd_sums
batch_norm_bwd_input = ROWS.batch_norm_bwd_input


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
    res = device_int(n)
    _launch.launch(_first_outside_k, n, *vec(x.reshape(-1)), _py(lo), _py(hi), res.buf, n)
    return first_found(res, n)


# layer norm's rows and parameter gradients: written once for both devices
# (``numgrad.kernels.rows``)
layer_norm_fwd = ROWS.layer_norm_fwd
layer_norm_bwd_input = ROWS.layer_norm_bwd_input
layer_norm_bwd_params = ROWS.layer_norm_bwd_params


# ========================================================================================
# losses over class indices: written once for both devices (``numgrad.kernels.rows``)
# ========================================================================================

nll = ROWS.nll
nll_bwd = ROWS.nll_bwd
