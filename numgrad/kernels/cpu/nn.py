"""Kernels for numgrad.nn: im2col/col2im (convolutions run as BLAS products over them),
max/avg pooling, batch/layer norm, the class-index losses and the fused optimizer updates.

Loops over the batch run in parallel (``prange``) when the work is large enough to pay for
the threads; the serial twin handles small inputs: each launcher picks (``pick`` of
``numgrad.kernels._parallel``; ``parallel`` overrides it). The ops call one name on either
device (``NN.im2col(x, ...)``): the handle hands CUDA data of the names in ``EITHER_DEVICE``
to ``numgrad.kernels.cuda.nn`` (one launcher per name), and the launchers bound from
``rows`` and ``windows`` hand it over themselves.
"""


import numpy as np
from numba import prange

from numgrad.kernels._jit import inline, jit, serial_and_parallel, specialize
from numgrad.kernels._parallel import pick
from numgrad.kernels.cpu import indexing as IDX
from numgrad.kernels.cpu import rows as ROWS
from numgrad.kernels.cpu import windows as WIN
from numgrad.kernels.cpu._scalar import like
from numgrad.kernels.cpu.optim import _adam_consts, _adam_update, _rmsprop_update, _sgd_update

# the kernels an op calls with data of either device: ``NN.<name>`` hands CUDA data to
# ``numgrad.kernels.cuda.nn``'s kernel of the same name (``numgrad.kernels.either_device``)
EITHER_DEVICE = ("im2col", "col2im", "channel_stats", "inv_std", "running_update",
                 "batch_norm_apply", "batch_norm_bwd_sums", "batch_norm_bwd_input",
                 "layer_norm_bwd_params", "first_outside", "nll", "nll_bwd", "sgd_step",
                 "adam_step", "rmsprop_step")

# ========================================================================================
# convolution: unfold (im2col) and its adjoint fold (col2im)
# ========================================================================================


# im2col's column rows and col2im's planes are window functions written once for both devices
# (``numgrad.kernels.windows``: ``im2col_rows``, ``col2im_pixels``) over flat data. im2col
# writes a column row through a 1-D view (any layout of ``cols``); both layouts get loops
# typed for their array: (N, K, L) for unfold, and (K, N, L) for the convolutions' single
# GEMM over the batch, which the op layer passes as its (N, K, L) transposed view (indexing
# that view directly runs 2-3x slower). col2im reads flat C-contiguous columns of either
# layout.


@inline
def _row_nk(cols, n, row):
    return cols[n, row]


@inline
def _row_kn(cols, n, row):
    return cols[row, n]


def _im2col(x, n_b, n_c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols):
    """cols[n, (c*kh + i)*kw + j, y*ow + x] = x[n, c, y*sh - ph + i*dh, x*sw - pw + j*dw] (0 out
    of bounds; ``x`` flat C-contiguous), a column row at a time (``f``: ``im2col_rows``;
    ``run``: the row's view)."""
    for n in prange(n_b):
        for c in range(n_c):
            for i in range(kh):
                for j in range(kw):
                    f(x, (n * n_c + c) * h * w, w, 1, h, w, i, j, 0, oh, 0, ow, sh, sw, ph,  # noqa: F821
                      pw, dh, dw, ow, run(cols, n, (c * kh + i) * kw + j), 0, 1)  # noqa: F821


def _col2im(cols, n_b, n_c, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, x, h, w, nstride, kstride):
    """x = the adjoint of im2col of the flat columns (column row k of image n at
    n * nstride + k * kstride), a plane at a time (``f``: ``col2im_pixels``; ``x`` flat
    C-contiguous)."""
    kk = kh * kw
    for n in prange(n_b):
        for c in range(n_c):
            f(cols, n * nstride + c * kk * kstride, kstride, 1, kh, kw, sh, sw, ph, pw,  # noqa: F821
              dh, dw, oh, ow, 0, h, 0, w, x, (n * n_c + c) * h * w, w, 1)


def _launchers(par):
    """The serial (or multithreaded) im2col and col2im launchers: columns (N, K, L) of any
    strides (im2col runs the loop compiled for their layout)."""
    opts = {"parallel": True} if par else None
    suffix = "_parallel" if par else ""
    rows = WIN._F["im2col_rows"]
    im_nk = specialize(_im2col, "nk" + suffix, opts, f=rows, run=_row_nk)
    im_kn = specialize(_im2col, "kn" + suffix, opts, f=rows, run=_row_kn)
    fold = specialize(_col2im, "planes" + suffix, opts, f=WIN._F["col2im_pixels"])

    def im2col(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols):
        n_b, n_c, h, w = x.shape
        xf = np.ascontiguousarray(x).reshape(-1)
        if not cols.flags.c_contiguous:
            t = cols.transpose(1, 0, 2)
            if t.flags.c_contiguous:
                return im_kn(xf, n_b, n_c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, t)
        return im_nk(xf, n_b, n_c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols)

    def col2im(cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, x):
        n_b, n_c, h, w = x.shape
        n_k, n_l = cols.shape[1], cols.shape[2]
        t = cols.transpose(1, 0, 2)
        if not cols.flags.c_contiguous and t.flags.c_contiguous:
            flat, nstride, kstride = t.reshape(-1), n_l, n_b * n_l
        else:
            flat, nstride, kstride = np.ascontiguousarray(cols).reshape(-1), n_k * n_l, n_l
        xf = x.reshape(-1) if x.flags.c_contiguous else np.empty(x.size, x.dtype)
        fold(flat, n_b, n_c, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, xf, h, w, nstride, kstride)
        if not x.flags.c_contiguous:
            x[...] = xf.reshape(x.shape)
    return im2col, col2im


_IM2COL, _COL2IM = zip(_launchers(False), _launchers(True))  # (serial, threaded) each


def im2col(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols, parallel=None):
    """cols[n, (c*kh + i)*kw + j, y*ow + x] = x[n, c, y*sh - ph + i*dh, x*sw - pw + j*dw] (0 out
    of bounds), threaded by the columns' size; ``cols``: (N, K, L), any strides."""
    pick(*_IM2COL, cols.size, parallel=parallel)(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow,
                                                 cols)


# d/dcols <x, col2im(cols)> = im2col: each pixel sums the column entries that copied it
def col2im(cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, x, parallel=None):
    """x = the adjoint of im2col of ``cols`` (N, K, L), threaded by the columns' size."""
    pick(*_COL2IM, cols.size, parallel=parallel)(cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow,
                                                 x)


# ========================================================================================
# pooling
# ========================================================================================


# the pooling windows are written once for both devices (``numgrad.kernels.windows``,
# launched by ``numgrad.kernels.cpu.windows``, each launcher picking its serial or threaded
# loop): these names are theirs
max_pool2d = WIN.max_pool2d
max_pool2d_bwd = WIN.max_pool2d_bwd
avg_pool2d = WIN.avg_pool2d
avg_pool2d_bwd = WIN.avg_pool2d_bwd


# ========================================================================================
# normalization: statistics over (N, L) per channel (batch norm) or per row (layer norm)
# ========================================================================================


# batch norm: a channel of x (N, C, L) is a row of N planes of L elements, one row function of
# ``numgrad.kernels.rows`` each (the CUDA module binds the same functions: a block per channel)
_BN_STATS = ROWS._F["batch_norm_stats_row"]
_BN_INV_STD = ROWS._F["inv_std_row"]
_BN_RUNNING = ROWS._F["running_update_row"]
_BN_APPLY = ROWS._F["batch_norm_apply_row"]
_BN_SUMS = ROWS._F["batch_norm_sums_row"]
_BN_BWD = ROWS._F["batch_norm_bwd_row"]


@jit
def channel_stats(x, eps, mean, var, invstd):
    """Mean, biased variance and 1/sqrt(var + eps) of x (N, C, L) per channel (two passes)."""
    n_b, n_c, n_l = x.shape
    xf = x.reshape(x.size)
    for c in range(n_c):
        _BN_STATS(xf, c * n_l, n_c * n_l, 1, n_b, n_l, eps, mean, c, var, c, invstd, c, 0.0, 0)


@jit
def inv_std(var, eps, out):
    _BN_INV_STD(var, 0, 1, eps, out, 0, 1, var.size, 0)


@jit
def running_update(running, stat, momentum, scale):
    """running = (1 - momentum) running + momentum * scale * stat (batch norm's averages)."""
    _BN_RUNNING(running, 0, 1, stat, 0, 1, momentum, scale, running.size, 0)


_FIRST_OUTSIDE = IDX.F["first_outside_run"]


@jit
def first_outside(x, lo, hi):
    """Position of the first element outside [lo, hi] (nan counts as outside), or -1 (``x``
    flat; ``first_outside_run``, written once for both devices)."""
    return _FIRST_OUTSIDE(x, 0, 1, 0, x.size, lo, hi)


def _batch_norm_apply(x, mean, invstd, gamma, beta, out):
    """out = (x - mean) * invstd * gamma + beta per channel."""
    n_b, n_c, n_l = x.shape
    for n in prange(n_b):
        for c in range(n_c):
            _BN_APPLY(x[n, c], 0, 0, 1, 1, n_l, mean[c], invstd[c], gamma[c], beta[c],
                      out[n, c], 0, 0, 1, 0)


_BN_APPLY_LOOPS = serial_and_parallel(_batch_norm_apply)


def batch_norm_apply(x, mean, invstd, gamma, beta, out, parallel=None):
    """out = (x - mean) * invstd * gamma + beta per channel of x (N, C, L)."""
    pick(*_BN_APPLY_LOOPS, x.size, parallel=parallel)(x, mean, invstd, gamma, beta, out)


@jit
def batch_norm_bwd_sums(g, x, mean, invstd, sum_g, sum_gxhat):
    """Per channel: sum g and sum g * xhat (xhat = (x - mean) * invstd)."""
    n_b, n_c, n_l = x.shape
    gf = g.reshape(g.size)
    xf = x.reshape(x.size)
    for c in range(n_c):
        _BN_SUMS(gf, c * n_l, n_c * n_l, 1, xf, c * n_l, n_c * n_l, 1, n_b, n_l, mean[c],
                 invstd[c], sum_g, c, sum_gxhat, c, 0.0, 0)


# d/dx batch_norm (train) = gamma invstd / M (M g - sum g - xhat sum(g xhat))
def _batch_norm_bwd_input(g, x, mean, invstd, gamma, sum_g, sum_gxhat, training, gx):
    n_b, n_c, n_l = x.shape
    m = n_b * n_l
    for n in prange(n_b):
        for c in range(n_c):
            _BN_BWD(g[n, c], 0, 0, 1, x[n, c], 0, 0, 1, 1, n_l, mean[c], invstd[c], gamma[c],
                    sum_g[c], sum_gxhat[c], m, training, gx[n, c], 0, 0, 1, 0)


_BN_BWD_LOOPS = serial_and_parallel(_batch_norm_bwd_input)


def batch_norm_bwd_input(g, x, mean, invstd, gamma, sum_g, sum_gxhat, training, gx,
                         parallel=None):
    """gx: the input gradient of batch norm (``_batch_norm_bwd_input``), per channel."""
    pick(*_BN_BWD_LOOPS, x.size, parallel=parallel)(g, x, mean, invstd, gamma, sum_g,
                                                    sum_gxhat, training, gx)


# layer norm's rows (forward, input gradient) are row kernels written once for both devices
# (``numgrad.kernels.rows``): these launchers are theirs
layer_norm_fwd = ROWS.layer_norm_fwd
layer_norm_bwd_input = ROWS.layer_norm_bwd_input


_LN_PARAMS_TILE = ROWS._F["layer_norm_params_tile"]


# d gamma = sum_rows g xhat, d beta = sum_rows g (per feature)
@jit
def layer_norm_bwd_params(g, x, mean, rstd, ggamma, gbeta):
    """d gamma = sum over rows of g xhat, d beta = sum of g (``layer_norm_params_tile`` over
    every row and feature): summed in float64, written in the dtype of ``ggamma`` and
    ``gbeta`` (the parameters'). ``g`` and ``x``: C-contiguous (M, K)."""
    n_m, n_k = x.shape
    acc_g = np.zeros(n_k, np.float64)
    acc_b = np.zeros(n_k, np.float64)
    _LN_PARAMS_TILE(g.ravel(), 0, n_k, 1, x.ravel(), 0, n_k, 1, mean, 0, 1, rstd, 0, 1, 0, n_m,
                    1, 0, n_k, acc_g, acc_b, 0)
    for k in range(n_k):
        ggamma[k] = acc_g[k]
        gbeta[k] = acc_b[k]


# ========================================================================================
# losses over class indices: row kernels written once (``numgrad.kernels.rows``)
# ========================================================================================

nll = ROWS._NLL
nll_bwd = ROWS._NLL_BWD


# ========================================================================================
# optimizer updates: one fused pass per parameter (flat, contiguous float arrays)
# ========================================================================================


# the per-element updates are written once for both devices (``numgrad.kernels.optim_steps``,
# inlined here by ``numgrad.kernels.cpu.optim``); a state array a flag leaves unused is the
# parameter itself (the callers pass it as a stand-in), so it is read but never written


@jit
def sgd_step(p, g, buf, lr, weight_decay, momentum, dampening, nesterov, maximize, first):
    """SGD (``sgd_update``): momentum buffer ``buf`` (``first``: the first step's, which
    takes the gradient)."""
    lr_ = like(p[0], lr)
    wd = like(p[0], weight_decay)
    mom = like(p[0], momentum)
    damp = like(p[0], 1.0 - dampening)
    has_wd = weight_decay != 0
    has_mom = momentum != 0
    for i in range(p.size):
        pi, bi = _sgd_update(p[i], g[i], buf[i], lr_, wd, mom, damp, has_wd, has_mom, nesterov,
                             maximize, first)
        if has_mom:
            buf[i] = bi
        p[i] = pi


@jit
def adam_step(p, g, m, v, vmax, step, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad,
              maximize):
    """Adam / AdamW (``adam_update``) at the incremented ``step``, as PyTorch's single-tensor
    path computes it, rounding for rounding (see ``optim``'s docstring)."""
    step[0] += 1
    neg_step_size, bias2_sqrt = _adam_consts(float(step[0]), lr, beta1, beta2)
    w1 = like(p[0], 1.0 - beta1)
    w1_m1 = w1 - like(w1, 1.0)
    small = abs(w1) < 0.5
    b2 = like(p[0], beta2)
    w2 = like(p[0], 1.0 - beta2)
    wd = like(p[0], weight_decay)
    nss = like(p[0], neg_step_size)
    bc2 = like(p[0], bias2_sqrt)
    eps_ = like(p[0], eps)
    decay = like(p[0], 1.0 - lr * weight_decay)
    has_wd = weight_decay != 0
    for i in range(p.size):
        pi, mi, vi, xi = _adam_update(p[i], g[i], m[i], v[i], vmax[i], amsgrad, nss, bc2, eps_,
                                      maximize, has_wd, decoupled, decay, wd, w1, w1_m1, small,
                                      b2, w2)
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vmax[i] = xi
        p[i] = pi


@jit
def rmsprop_step(p, g, sq, buf, gavg, step, lr, alpha, eps, weight_decay, momentum, centered,
                 maximize):
    """RMSprop (``rmsprop_update``), counting the step, as PyTorch's single-tensor path
    computes it, rounding for rounding (see ``optim``'s docstring)."""
    step[0] += 1
    a = like(p[0], alpha)
    w = like(p[0], 1.0 - alpha)
    w_m1 = w - like(w, 1.0)
    small = abs(w) < 0.5
    wd = like(p[0], weight_decay)
    mom = like(p[0], momentum)
    neg_lr = like(p[0], -lr)
    eps_ = like(p[0], eps)
    has_wd = weight_decay != 0
    has_mom = momentum > 0
    for i in range(p.size):
        pi, si, bi, ai = _rmsprop_update(p[i], g[i], sq[i], buf[i], gavg[i], a, w, w_m1, small,
                                         wd, mom, neg_lr, eps_, has_wd, has_mom, centered,
                                         maximize)
        sq[i] = si
        if centered:
            gavg[i] = ai
        if has_mom:
            buf[i] = bi
        p[i] = pi
