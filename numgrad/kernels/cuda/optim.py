"""Fused optimizer updates on the GPU: the twin of ``numgrad.kernels.cpu.optim`` (same names,
same arguments, over ``CudaArray`` data), one thread per element of a flat parameter and its
state, with the CPU kernels' operations and roundings (scalars converted to the parameter
dtype first, fused multiply-adds where those have them).

The step count stays a host array beside CUDA parameters (PyTorch keeps ``state["step"]`` on
the CPU unless ``capturable``): ``count_step`` increments it and derives the step's scalars
on the host, with the CPU kernels' float64 arithmetic."""

import math

from numba import cuda

from numgrad._compile import tape as _tape
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import from_any


def count_step(step):
    """Increment ``step`` (the parameter's step count: a one-element host array) in its dtype
    and return the new count as a float. Python reads a tensor's value here: a compiled trace
    of device work cannot replay that, so it is reported to an active tape."""
    if _tape.TAPE is not None:
        _tape.host_read("an optimizer step of CUDA parameters (its step count)")
    step[0] += 1
    return float(step[0])


def _v(a):
    """(buffer, offset, element stride) of a 1-D CudaArray."""
    a = from_any(a)
    return a.buf, a.offset, a.strides_el[0] if a.strides_el else 1


@_launch.jit
def _adagrad_k(p, po, ps, g, go, gs, sm, so, ss, c, wd, eps, has_wd, maximize, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        gi = g[go + i * gs]
        if maximize:
            gi = -gi
        pi = p[po + i * ps]
        if has_wd:
            gi = cuda.fma(pi, wd, gi)
        s = cuda.fma(gi, gi, sm[so + i * ss])
        sm[so + i * ss] = s
        p[po + i * ps] = pi + (c * gi) / (math.sqrt(s) + eps)


def adagrad_step(p, g, state_sum, step, lr, lr_decay, weight_decay, eps, maximize):
    clr = lr / (1.0 + (count_step(step) - 1.0) * lr_decay)
    p = from_any(p)
    dt = p.dtype
    s = _launch.scalar
    _launch.launch(_adagrad_k, p.size, *_v(p), *_v(g), *_v(state_sum), s(dt, -clr),
                   s(dt, weight_decay), s(dt, eps), weight_decay != 0, bool(maximize), p.size)


@_launch.jit
def _adamax_k(p, po, ps, g, go, gs, m, mo, ms, u, uo, us, c, w1, w1m1, small, b2, wd, eps,
              has_wd, maximize, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        gi = g[go + i * gs]
        if maximize:
            gi = -gi
        pi = p[po + i * ps]
        if has_wd:
            gi = cuda.fma(pi, wd, gi)
        mi = m[mo + i * ms]
        d = gi - mi
        mi = cuda.fma(w1, d, mi) if small else cuda.fma(w1m1, d, gi)
        m[mo + i * ms] = mi
        a = u[uo + i * us] * b2
        b = abs(gi) + eps
        if a != a or b != b:
            ui = a + b
        else:
            ui = a if a > b else b
        u[uo + i * us] = ui
        p[po + i * ps] = pi + (c * mi) / ui


def _lerp_weights(dt, w):
    """The weight of ``lerp_`` and its complement, and which form it takes (|w| < 0.5)."""
    s = _launch.scalar
    w_ = s(dt, w)
    return w_, w_ - s(dt, 1.0), abs(float(w_)) < 0.5


def adamax_step(p, g, m, u, step, lr, beta1, beta2, eps, weight_decay, maximize):
    t = count_step(step)
    p = from_any(p)
    dt = p.dtype
    s = _launch.scalar
    _launch.launch(_adamax_k, p.size, *_v(p), *_v(g), *_v(m), *_v(u),
                   s(dt, -(lr / (1.0 - beta1 ** t))), *_lerp_weights(dt, 1.0 - beta1),
                   s(dt, beta2), s(dt, weight_decay), s(dt, eps), weight_decay != 0,
                   bool(maximize), p.size)


@_launch.device
def _adam_moments(gi, pi, m, mo, v, vo, w1, w1m1, small, b2, w2, wd, decay, has_wd, decoupled):
    """Weight decay, then m.lerp_(g, 1 - beta1) and v.mul_(beta2).addcmul_(g, g, 1 - beta2)
    in place; returns (param, grad, m, v)."""
    if has_wd:
        if decoupled:
            pi = pi * decay
        else:
            gi = cuda.fma(pi, wd, gi)
    mi = m[mo]
    d = gi - mi
    mi = cuda.fma(w1, d, mi) if small else cuda.fma(w1m1, d, gi)
    m[mo] = mi
    vi = cuda.fma(w2 * gi, gi, v[vo] * b2)
    v[vo] = vi
    return pi, gi, mi, vi


@_launch.jit
def _nadam_k(p, po, ps, g, go, gs, m, mo, ms, v, vo, vs, c1, c2, bc2, w1, w1m1, small, b2, w2,
             wd, eps, decay, has_wd, decoupled, maximize, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        gi = g[go + i * gs]
        if maximize:
            gi = -gi
        pi, gi, mi, vi = _adam_moments(gi, p[po + i * ps], m, mo + i * ms, v, vo + i * vs, w1,
                                       w1m1, small, b2, w2, wd, decay, has_wd, decoupled)
        denom = math.sqrt(vi / bc2) + eps
        pi = pi + (c1 * gi) / denom
        p[po + i * ps] = pi + (c2 * mi) / denom


def nadam_step(p, g, m, v, step, mu_product, lr, beta1, beta2, eps, weight_decay,
               momentum_decay, decoupled, maximize):
    t = count_step(step)
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (t * momentum_decay)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1.0) * momentum_decay)))
    mu_product[0] = mu_product[0] * mu_product.dtype.type(mu)
    prod = float(mu_product[0])
    p = from_any(p)
    dt = p.dtype
    s = _launch.scalar
    _launch.launch(_nadam_k, p.size, *_v(p), *_v(g), *_v(m), *_v(v),
                   s(dt, -lr * (1.0 - mu) / (1.0 - prod)),
                   s(dt, (-lr * mu_next) / (1.0 - prod * mu_next)), s(dt, 1.0 - beta2 ** t),
                   *_lerp_weights(dt, 1.0 - beta1), s(dt, beta2), s(dt, 1.0 - beta2),
                   s(dt, weight_decay), s(dt, eps), s(dt, 1.0 - lr * weight_decay),
                   weight_decay != 0, bool(decoupled), bool(maximize), p.size)


@_launch.jit
def _radam_k(p, po, ps, g, go, gs, m, mo, ms, v, vo, vs, bc1, lr, one, num, rect, rectify, w1,
             w1m1, small, b2, w2, wd, eps, decay, has_wd, decoupled, maximize, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        gi = g[go + i * gs]
        if maximize:
            gi = -gi
        pi, gi, mi, vi = _adam_moments(gi, p[po + i * ps], m, mo + i * ms, v, vo + i * vs, w1,
                                       w1m1, small, b2, w2, wd, decay, has_wd, decoupled)
        x = (mi / bc1) * lr
        if rectify:
            x = (x * ((one / (math.sqrt(vi) + eps)) * num)) * rect  # float / t: reciprocal
        p[po + i * ps] = pi - x


def radam_step(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    t = count_step(step)
    bias1 = 1.0 - beta1 ** t
    bias2 = 1.0 - beta2 ** t
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * t * (beta2 ** t) / bias2
    rectify = rho_t > 5.0
    rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
            / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)) ** 0.5 if rectify else 0.0
    p = from_any(p)
    dt = p.dtype
    s = _launch.scalar
    _launch.launch(_radam_k, p.size, *_v(p), *_v(g), *_v(m), *_v(v), s(dt, bias1), s(dt, lr),
                   s(dt, 1.0), s(dt, bias2 ** 0.5), s(dt, rect), rectify,
                   *_lerp_weights(dt, 1.0 - beta1),
                   s(dt, beta2), s(dt, 1.0 - beta2), s(dt, weight_decay), s(dt, eps),
                   s(dt, 1.0 - lr * weight_decay), weight_decay != 0, bool(decoupled),
                   bool(maximize), p.size)


@_launch.jit
def _adadelta_k(p, po, ps, g, go, gs, sq, so, ss, acc, ao, as_, r, w, wd, eps, neg_lr, has_wd,
                maximize, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        gi = g[go + i * gs]
        if maximize:
            gi = -gi
        pi = p[po + i * ps]
        if has_wd:
            gi = cuda.fma(pi, wd, gi)
        si = cuda.fma(w * gi, gi, sq[so + i * ss] * r)
        sq[so + i * ss] = si
        ai = acc[ao + i * as_]
        d = (math.sqrt(ai + eps) / math.sqrt(si + eps)) * gi
        acc[ao + i * as_] = cuda.fma(w * d, d, ai * r)
        p[po + i * ps] = cuda.fma(d, neg_lr, pi)


def adadelta_step(p, g, sq, acc, step, lr, rho, eps, weight_decay, maximize):
    count_step(step)
    p = from_any(p)
    dt = p.dtype
    s = _launch.scalar
    _launch.launch(_adadelta_k, p.size, *_v(p), *_v(g), *_v(sq), *_v(acc), s(dt, rho),
                   s(dt, 1.0 - rho), s(dt, weight_decay), s(dt, eps), s(dt, -lr),
                   weight_decay != 0, bool(maximize), p.size)
