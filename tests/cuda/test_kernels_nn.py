"""CUDA nn kernels (convolution, pooling, normalization, NLL, optimizer steps) against the CPU
kernels on the same inputs."""

import numpy as np
import pytest
from conftest import BACKEND, assert_close, to_cuda

from numgrad.kernels.cpu import nn as NN
from numgrad.kernels.cuda import nn as CN
from numgrad.kernels.cuda.array import CudaArray

FLOATS = [np.float32, np.float64]


def _tol(dt):
    return {"rtol": 1e-5, "atol": 1e-6} if dt == np.float32 else {"rtol": 1e-12, "atol": 1e-12}


def _osize(h, k, s, p, d, ceil=False):
    eff = d * (k - 1) + 1
    if ceil:
        o = -(-(h + 2 * p - eff) // s) + 1
        if (o - 1) * s >= h + p:
            o -= 1
        return o
    return (h + 2 * p - eff) // s + 1


def test_one_launcher_per_name():
    # the CPU launchers pick their serial or threaded loop; the GPU has one launcher a name
    assert not [n for n in dir(CN) if n.endswith("_par")] and not hasattr(CN, "pick")
    for name in ("im2col", "col2im", "max_pool2d", "max_pool2d_bwd", "avg_pool2d",
                 "avg_pool2d_bwd", "batch_norm_apply", "batch_norm_bwd_input", "layer_norm_fwd",
                 "layer_norm_bwd_input"):
        assert callable(getattr(NN, name)) and callable(getattr(CN, name))


# ----------------------------------------------------------------------------------------
# im2col / col2im
# ----------------------------------------------------------------------------------------

GEOS = [  # kh, kw, sh, sw, ph, pw, dh, dw
    (3, 2, 2, 1, 1, 1, 1, 2),
    (2, 2, 1, 1, 0, 0, 1, 1),
    (2, 3, 3, 2, 2, 1, 1, 2),  # windows past the padding, columns of no pixel
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("geo", GEOS)
def test_im2col(dt, geo, rng):
    kh, kw, sh, sw, ph, pw, dh, dw = geo
    x = rng.standard_normal((2, 2, 5, 4)).astype(dt)
    oh, ow = _osize(5, kh, sh, ph, dh), _osize(4, kw, sw, pw, dw)
    args = (kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
    cols = np.empty((2, 2 * kh * kw, oh * ow), dt)
    NN.im2col(x, *args, cols)
    got = CudaArray.empty(cols.shape, dt)
    CN.im2col(to_cuda(x), *args, got)
    assert_close(got, cols, rtol=0, atol=0)
    # k-major layout: the output is a transposed view; the input a strided view
    xt = to_cuda(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(0, 1, 3, 2)
    km = CudaArray.empty((2 * kh * kw, 2, oh * ow), dt)
    CN.im2col(xt, *args, km.transpose(1, 0, 2))
    assert_close(km, cols.transpose(1, 0, 2).copy(), rtol=0, atol=0)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("geo", GEOS)
def test_col2im(dt, geo, rng):
    kh, kw, sh, sw, ph, pw, dh, dw = geo
    oh, ow = _osize(5, kh, sh, ph, dh), _osize(4, kw, sw, pw, dw)
    args = (kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
    cols = rng.standard_normal((2, 2 * kh * kw, oh * ow)).astype(dt)
    x = np.empty((2, 2, 5, 4), dt)
    NN.col2im(cols, *args, x)
    got = CudaArray.empty(x.shape, dt)
    CN.col2im(to_cuda(cols), *args, got)
    assert_close(got, x, rtol=0, atol=0)  # one window function: the CPU's sums, in order
    # strided columns (k-major storage viewed as (N, K, L))
    ck = to_cuda(np.ascontiguousarray(cols.transpose(1, 0, 2))).transpose(1, 0, 2)
    got2 = CudaArray.empty(x.shape, dt)
    CN.col2im(ck, *args, got2)
    assert_close(got2, x, rtol=0, atol=0)


def test_col2im_is_adjoint_of_im2col(rng):
    kh, kw, sh, sw, ph, pw, dh, dw = GEOS[0]
    oh, ow = _osize(5, kh, sh, ph, dh), _osize(4, kw, sw, pw, dw)
    args = (kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
    x = rng.standard_normal((1, 2, 5, 4))
    c = rng.standard_normal((1, 2 * kh * kw, oh * ow))
    ux = CudaArray.empty(c.shape, np.float64)
    CN.im2col(to_cuda(x), *args, ux)
    fc = CudaArray.empty(x.shape, np.float64)
    CN.col2im(to_cuda(c), *args, fc)
    np.testing.assert_allclose((ux.to_host() * c).sum(), (x * fc.to_host()).sum(), rtol=1e-12)


# ----------------------------------------------------------------------------------------
# pooling
# ----------------------------------------------------------------------------------------

MAX_GEOS = [  # kh, kw, sh, sw, ph, pw, dh, dw, ceil
    (3, 3, 2, 2, 1, 1, 1, 1, False),
    (2, 3, 1, 1, 1, 0, 2, 1, True),
]


def _max_pool_cpu(x, geo):
    kh, kw, sh, sw, ph, pw, dh, dw, ceil = geo
    n, c, h, w = x.shape
    oh, ow = _osize(h, kh, sh, ph, dh, ceil), _osize(w, kw, sw, pw, dw, ceil)
    out = np.empty((n, c, oh, ow), x.dtype)
    idx = np.empty((n, c, oh, ow), np.int64)
    NN.max_pool2d(x, kh, kw, sh, sw, ph, pw, dh, dw, out, idx)
    return out, idx


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("geo", MAX_GEOS)
def test_max_pool2d_nan_and_ties(dt, geo, rng):
    x = np.round(rng.standard_normal((2, 2, 5, 5)) * 2).astype(dt)  # many ties
    x[0, 0, 1, 2] = np.nan
    x[1, 1, 3, 3] = np.nan
    out, idx = _max_pool_cpu(x, geo)
    kh, kw, sh, sw, ph, pw, dh, dw, _ = geo
    got = CudaArray.empty(out.shape, dt)
    gidx = CudaArray.empty(idx.shape, np.int64)
    CN.max_pool2d(to_cuda(x), kh, kw, sh, sw, ph, pw, dh, dw, got, gidx)
    assert_close(got, out, rtol=0, atol=0)
    assert_close(gidx, idx, rtol=0, atol=0)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("geo", MAX_GEOS)
def test_max_pool2d_bwd(dt, geo, rng):
    x = rng.standard_normal((2, 2, 5, 5)).astype(dt)
    _, idx = _max_pool_cpu(x, geo)
    g = rng.standard_normal(idx.shape).astype(dt)
    gx = np.empty(x.shape, dt)
    NN.max_pool2d_bwd(g, idx, gx)
    got = CudaArray.empty(x.shape, dt)
    gx_nan = to_cuda(np.full(x.shape, np.nan, dt))  # must be overwritten, not accumulated
    CN.max_pool2d_bwd(to_cuda(g), to_cuda(idx), gx_nan)
    CN.max_pool2d_bwd(to_cuda(g), to_cuda(idx), got)
    assert_close(got, gx, **_tol(dt))
    assert_close(gx_nan, gx, **_tol(dt))


AVG_GEOS = [  # kh, kw, sh, sw, ph, pw, count_include_pad, divisor, ceil
    (3, 3, 2, 2, 1, 1, True, 0, False),
    (3, 2, 2, 1, 1, 1, False, 0, True),
    (2, 2, 1, 2, 1, 0, True, 5, True),
    (2, 3, 1, 1, 0, 1, False, 0, False),
]


def _avg_geo(geo, h, w):
    kh, kw, sh, sw, ph, pw, inc, div, ceil = geo
    return (kh, kw, sh, sw, ph, pw, inc, div), _osize(h, kh, sh, ph, 1, ceil), \
        _osize(w, kw, sw, pw, 1, ceil)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("geo", AVG_GEOS)
def test_avg_pool2d_fwd_bwd(dt, geo, rng):
    x = rng.standard_normal((2, 2, 5, 4)).astype(dt)
    args, oh, ow = _avg_geo(geo, 5, 4)
    out = np.empty((2, 2, oh, ow), dt)
    NN.avg_pool2d(x, *args, out)
    got = CudaArray.empty(out.shape, dt)
    CN.avg_pool2d(to_cuda(x), *args, got)
    assert_close(got, out, **_tol(dt))
    g = rng.standard_normal(out.shape).astype(dt)
    gx = np.empty(x.shape, dt)
    NN.avg_pool2d_bwd(g, *args, gx)
    ggot = CudaArray.empty(x.shape, dt)
    CN.avg_pool2d_bwd(to_cuda(g), *args, ggot)
    assert_close(ggot, gx, **_tol(dt))


# ----------------------------------------------------------------------------------------
# batch norm
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 1), (1, 1, 7)])
def test_channel_stats(dt, shape, rng):
    x = (rng.standard_normal(shape) * 3 + 1).astype(dt)
    c = shape[1]
    ref = [np.empty(c) for _ in range(3)]
    NN.channel_stats(x, 1e-5, *ref)
    got = [CudaArray.empty((c,), np.float64) for _ in range(3)]
    CN.channel_stats(to_cuda(x), 1e-5, *got)
    for a, b in zip(got, ref):
        assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dt", FLOATS)
def test_inv_std_and_running_update(dt, rng):
    var = np.abs(rng.standard_normal(5)).astype(dt)
    ref = np.empty(5)
    NN.inv_std(var, 1e-5, ref)
    got = CudaArray.empty((5,), np.float64)
    CN.inv_std(to_cuda(var), 1e-5, got)
    assert_close(got, ref, rtol=1e-14, atol=0)
    run = rng.standard_normal(5).astype(dt)
    stat = rng.standard_normal(5)
    grun = to_cuda(run)
    NN.running_update(run, stat, 0.1, 10 / 9)
    CN.running_update(grun, to_cuda(stat), 0.1, 10 / 9)
    assert_close(grun, run, **_tol(dt))


@pytest.mark.parametrize("dt", FLOATS)
def test_batch_norm_apply(dt, rng):
    x = rng.standard_normal((3, 4, 5)).astype(dt)
    mean, var, inv = np.empty(4), np.empty(4), np.empty(4)
    NN.channel_stats(x, 1e-5, mean, var, inv)
    gam = rng.standard_normal(4).astype(dt)
    bet = rng.standard_normal(4).astype(dt)
    out = np.empty(x.shape, dt)
    NN.batch_norm_apply(x, mean, inv, gam, bet, out)
    got = CudaArray.empty(x.shape, dt)
    CN.batch_norm_apply(to_cuda(x), to_cuda(mean), to_cuda(inv), to_cuda(gam), to_cuda(bet), got)
    assert_close(got, out, **_tol(dt))


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_bwd(dt, training, rng):
    x = rng.standard_normal((3, 4, 5)).astype(dt)
    g = rng.standard_normal((3, 4, 5)).astype(dt)
    mean, var, inv = np.empty(4), np.empty(4), np.empty(4)
    NN.channel_stats(x, 1e-5, mean, var, inv)
    gam = rng.standard_normal(4).astype(dt)
    sg, sx = np.empty(4), np.empty(4)
    NN.batch_norm_bwd_sums(g, x, mean, inv, sg, sx)
    gsg, gsx = CudaArray.empty((4,), np.float64), CudaArray.empty((4,), np.float64)
    cx, cg, cmean, cinv = to_cuda(x), to_cuda(g), to_cuda(mean), to_cuda(inv)
    CN.batch_norm_bwd_sums(cg, cx, cmean, cinv, gsg, gsx)
    assert_close(gsg, sg, rtol=1e-10, atol=1e-10)
    assert_close(gsx, sx, rtol=1e-10, atol=1e-10)
    gx = np.empty(x.shape, dt)
    NN.batch_norm_bwd_input(g, x, mean, inv, gam, sg, sx, training, gx)
    got = CudaArray.empty(x.shape, dt)
    CN.batch_norm_bwd_input(cg, cx, cmean, cinv, to_cuda(gam), to_cuda(sg), to_cuda(sx),
                            training, got)
    assert_close(got, gx, **_tol(dt))


def test_batch_norm_bwd_sums_empty_batch():
    x = np.zeros((0, 3, 2), np.float32)
    sg, sx = CudaArray.empty((3,), np.float64), CudaArray.empty((3,), np.float64)
    CN.batch_norm_bwd_sums(to_cuda(x), to_cuda(x), to_cuda(np.zeros(3)), to_cuda(np.ones(3)),
                           sg, sx)
    assert_close(sg, np.zeros(3))
    assert_close(sx, np.zeros(3))


# ----------------------------------------------------------------------------------------
# layer norm
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", [(3, 7), (1, 40), (4, 1)])
def test_layer_norm(dt, shape, rng):
    x = (rng.standard_normal(shape) * 2 - 1).astype(dt)
    m, k = shape
    gam = rng.standard_normal(k).astype(dt)
    bet = rng.standard_normal(k).astype(dt)
    out, mean, rstd = np.empty(shape, dt), np.empty(m), np.empty(m)
    NN.layer_norm_fwd(x, gam, bet, 1e-5, out, mean, rstd)
    gout = CudaArray.empty(shape, dt)
    gmean, grstd = CudaArray.empty((m,), np.float64), CudaArray.empty((m,), np.float64)
    cx, cgam = to_cuda(x), to_cuda(gam)
    CN.layer_norm_fwd(cx, cgam, to_cuda(bet), 1e-5, gout, gmean, grstd)
    assert_close(gout, out, **_tol(dt))
    assert_close(gmean, mean, rtol=1e-12, atol=1e-12)
    assert_close(grstd, rstd, rtol=1e-12, atol=1e-12)

    g = rng.standard_normal(shape).astype(dt)
    gx = np.empty(shape, dt)
    NN.layer_norm_bwd_input(g, x, mean, rstd, gam, gx)
    ggx = CudaArray.empty(shape, dt)
    cg, cmean, crstd = to_cuda(g), to_cuda(mean), to_cuda(rstd)
    CN.layer_norm_bwd_input(cg, cx, cmean, crstd, cgam, ggx)
    assert_close(ggx, gx, rtol=1e-4 if dt == np.float32 else 1e-10, atol=1e-5)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", [(5, 40), (3, 3), (0, 4)])
def test_layer_norm_bwd_params(dt, shape, rng):
    m, k = shape
    x = rng.standard_normal(shape).astype(dt)
    g = rng.standard_normal(shape).astype(dt)
    mean = rng.standard_normal(m)
    rstd = np.abs(rng.standard_normal(m)) + 0.5
    for out in (np.float64, dt):  # summed in float64, written in the output's dtype
        gg, gb = np.empty(k, out), np.empty(k, out)
        NN.layer_norm_bwd_params(g, x, mean, rstd, gg, gb)
        cgg, cgb = CudaArray.empty((k,), out), CudaArray.empty((k,), out)
        CN.layer_norm_bwd_params(to_cuda(g), to_cuda(x), to_cuda(mean), to_cuda(rstd), cgg, cgb)
        tol = 1e-12 if out == np.float64 else 1e-6
        assert_close(cgg, gg, rtol=tol, atol=tol)
        assert_close(cgb, gb, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------------------
# first_outside, NLL
# ----------------------------------------------------------------------------------------


def test_first_outside(rng):
    i = rng.integers(0, 10, 70).astype(np.int64)
    assert CN.first_outside(to_cuda(i), 0, 9) == NN.first_outside(i, 0, 9) == -1
    i[50] = 10
    i[33] = -1
    i[60] = 12
    assert CN.first_outside(to_cuda(i), 0, 9) == NN.first_outside(i, 0, 9) == 33
    f = rng.random(40).astype(np.float32)
    assert CN.first_outside(to_cuda(f), 0.0, 1.0) == -1
    f[25] = np.nan
    f[30] = 1.5
    assert CN.first_outside(to_cuda(f), 0.0, 1.0) == NN.first_outside(f, 0.0, 1.0) == 25
    f[3] = -0.0
    f[4] = 1.0
    assert CN.first_outside(to_cuda(f), 0.0, 1.0) == 25
    assert CN.first_outside(to_cuda(np.zeros(0, np.int64)), 0, 3) == -1
    i1 = np.array([7], np.int64)
    assert CN.first_outside(to_cuda(i1), 0, 6) == NN.first_outside(i1, 0, 6) == 0


@pytest.mark.parametrize("dt", FLOATS)
def test_nll(dt, rng):
    logp = rng.standard_normal((9, 4)).astype(dt)
    t = rng.integers(0, 4, 9).astype(np.int64)
    t[2] = -100
    t[6] = -100
    w = (rng.random(4) + 0.5).astype(dt)
    losses, weights = np.empty(9, dt), np.empty(9, dt)
    assert NN.nll(logp, t, w, -100, losses, weights) == -1
    gl, gw = CudaArray.empty((9,), dt), CudaArray.empty((9,), dt)
    assert CN.nll(to_cuda(logp), to_cuda(t), to_cuda(w), -100, gl, gw) == -1
    assert_close(gl, losses, rtol=0, atol=0)
    assert_close(gw, weights, rtol=0, atol=0)
    t[7] = 4
    t[4] = -1
    assert CN.nll(to_cuda(logp), to_cuda(t), to_cuda(w), -100, gl, gw) == \
        NN.nll(logp, t, w, -100, losses, weights) == 4
    # ignore_index that is itself out of range, or a valid class
    t2 = np.array([4, 1, 0], np.int64)
    assert CN.nll(to_cuda(logp[:3]), to_cuda(t2), to_cuda(w), 4, gl[:3], gw[:3]) == -1
    t3 = np.array([1, 1, 0], np.int64)
    l3, w3 = np.empty(3, dt), np.empty(3, dt)
    NN.nll(logp[:3], t3, w, 1, l3, w3)
    CN.nll(to_cuda(logp[:3]), to_cuda(t3), to_cuda(w), 1, gl[:3], gw[:3])
    assert_close(gl[:3], l3, rtol=0, atol=0)
    assert_close(gw[:3], w3, rtol=0, atol=0)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("per_sample", [True, False])
def test_nll_bwd(dt, per_sample, rng):
    t = rng.integers(0, 5, 6).astype(np.int64)
    w = (rng.random(6) + 0.5).astype(dt)
    w[3] = 0  # an ignored sample
    g = rng.standard_normal(6 if per_sample else 1).astype(dt)
    out = np.empty((6, 5), dt)
    NN.nll_bwd(g, t, w, 1 / 3.7, out)
    got = to_cuda(np.full((6, 5), np.nan, dt))
    CN.nll_bwd(to_cuda(g), to_cuda(t), to_cuda(w), 1 / 3.7, got)
    assert_close(got, out, rtol=0, atol=0)


# ----------------------------------------------------------------------------------------
# optimizer steps
# ----------------------------------------------------------------------------------------


def _state(rng, dt, n=37, k=1):
    return [rng.standard_normal(n).astype(dt) for _ in range(k)]


SGD_CASES = [  # lr, weight_decay, momentum, dampening, nesterov, maximize
    (0.1, 0.0, 0.0, 0.0, False, False),
    (0.05, 0.01, 0.9, 0.1, False, True),
    (0.05, 0.0, 0.9, 0.0, True, False),
]


# On a GPU, NVVM contracts a multiply and an add into one FMA (one rounding instead of two),
# which the CPU kernels never do: updates agree to the last bits, exactly on the simulator
FMA_RTOL = {np.float32: 4e-6, np.float64: 4e-15} if BACKEND == "gpu" else {}


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("case", SGD_CASES)
def test_sgd_step(dt, case, rng):
    p, g, buf = _state(rng, dt, k=3)
    cp, cg, cb = to_cuda(p), to_cuda(g), to_cuda(buf)
    for first in (True, False):
        b_cpu, b_gpu = (buf, cb) if case[2] else (p, cp)  # no momentum: buf aliases p
        NN.sgd_step(p, g, b_cpu, *case, first)
        CN.sgd_step(cp, cg, b_gpu, *case, first)
        assert_close(cp, p, rtol=FMA_RTOL.get(dt, 0), atol=0)
        assert_close(cb, buf, rtol=FMA_RTOL.get(dt, 0), atol=0)


ADAM_CASES = [  # lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize
    (1e-3, 0.9, 0.999, 1e-8, 0.0, False, False, False),
    (1e-2, 0.8, 0.99, 1e-6, 0.1, False, True, True),
    (1e-2, 0.9, 0.999, 1e-8, 0.01, True, True, False),
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("case", ADAM_CASES)
def test_adam_step(dt, case, rng):
    p, g, m, v = _state(rng, dt, k=4)
    v = np.abs(v)
    vmax = np.zeros_like(p)
    amsgrad = case[6]
    cp, cg, cm, cv, cx = (to_cuda(a) for a in (p, g, m, v, vmax))
    steps, csteps = np.zeros(1, np.float32), np.zeros(1, np.float32)  # counted by the kernels
    for _ in range(3):
        NN.adam_step(p, g, m, v, vmax if amsgrad else p, steps, *case)
        CN.adam_step(cp, cg, cm, cv, cx if amsgrad else cp, csteps, *case)
        g = g * 0.5 + 0.1
        cg = to_cuda(g)
    assert steps[0] == csteps[0] == 3
    for a, b in ((cp, p), (cm, m), (cv, v), (cx, vmax)):
        assert_close(a, b, rtol=max(FMA_RTOL.get(dt, 0), 1e-6 if dt == np.float32 else 1e-14),
                     atol=0)


RMS_CASES = [  # lr, alpha, eps, weight_decay, momentum, centered, maximize
    (1e-2, 0.99, 1e-8, 0.0, 0.0, False, False),
    (1e-2, 0.9, 1e-6, 0.1, 0.9, True, False),
    (1e-3, 0.99, 1e-8, 0.0, 0.5, False, True),
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("case", RMS_CASES)
def test_rmsprop_step(dt, case, rng):
    p, g, buf, gavg = _state(rng, dt, k=4)
    sq = np.abs(rng.standard_normal(p.size)).astype(dt) + 1
    gavg = gavg * 0.1
    cp, cg, cq, cb, ca = (to_cuda(a) for a in (p, g, sq, buf, gavg))
    mom, centered = case[4], case[5]
    steps, csteps = np.zeros(1, np.float32), np.zeros(1, np.float32)
    for _ in range(2):
        NN.rmsprop_step(p, g, sq, buf if mom else p, gavg if centered else p, steps, *case)
        CN.rmsprop_step(cp, cg, cq, cb if mom else cp, ca if centered else cp, csteps, *case)
    assert steps[0] == csteps[0] == 2
    for a, b in ((cp, p), (cq, sq), (cb, buf), (ca, gavg)):
        assert_close(a, b, rtol=max(FMA_RTOL.get(dt, 0), 1e-6 if dt == np.float32 else 1e-14),
                     atol=0)


def test_empty_inputs_launch_nothing():
    e = to_cuda(np.zeros((0, 2, 5, 4), np.float32))
    cols = CudaArray.empty((0, 8, 12), np.float32)
    CN.im2col(e, 2, 2, 1, 1, 0, 0, 1, 1, 4, 3, cols)
    CN.col2im(cols, 2, 2, 1, 1, 0, 0, 1, 1, 4, 3, CudaArray.empty((0, 2, 5, 4), np.float32))
    p = to_cuda(np.zeros(0, np.float32))
    CN.sgd_step(p, p, p, 0.1, 0.0, 0.0, 0.0, False, False, True)
    out = CudaArray.empty((0,), np.float32)
    assert CN.nll(to_cuda(np.zeros((0, 3), np.float32)), to_cuda(np.zeros(0, np.int64)),
                  to_cuda(np.ones(3, np.float32)), -100, out, out) == -1


def test_cpu_operand_is_the_pytorch_device_error():
    x = np.zeros((1, 1, 2, 2), np.float32)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        CN.max_pool2d(x, 1, 1, 1, 1, 0, 0, 1, 1, CudaArray.empty((1, 1, 2, 2), np.float32),
                      CudaArray.empty((1, 1, 2, 2), np.int64))
