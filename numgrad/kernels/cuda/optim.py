"""Fused optimizer updates on the GPU, from the formulas the CPU kernels use
(``numgrad.kernels.optim_steps``; same names and arguments as ``numgrad.kernels.cpu.optim``
and, for SGD, Adam and RMSprop, ``numgrad.kernels.cpu.nn``, over ``CudaArray`` data): one
thread per element of a flat parameter and its state runs the shared ``*_update`` function as
a device function, with the scalars converted to the parameter dtype first, as the CPU kernels
convert them.

The step count stays a host array beside CUDA parameters (PyTorch keeps ``state["step"]`` on
the CPU unless ``capturable``): ``count_step`` increments it and the shared ``*_consts``
functions derive the step's numbers on the host, with the CPU kernels' float64 arithmetic."""

import numpy as np
from numba import cuda

from numgrad import _hook
from numgrad.kernels import optim_steps as S
from numgrad.kernels.cpu import _fastmath
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import from_any, vec


def count_step(step):
    """Increment ``step`` (the parameter's step count: a one-element host array) in its dtype
    and return the new count as a float. Python reads a tensor's value here: a compiled trace
    of device work cannot replay that, so it is reported to an active tape."""
    _hook.host_read("an optimizer step of CUDA parameters (its step count)")
    step[0] += 1
    return float(step[0])


def _sim_ffma(a, b, c):
    """The simulator's fused multiply-add: the CPU formula (float64), rounded back to the type
    of ``a`` as a GPU's ``fma`` returns it (a Python float would carry double precision into
    the rest of the update)."""
    r = _fastmath.ffma(a, b, c)
    return type(a)(r) if isinstance(a, np.floating) else r


_UPDATES = ("lerp2", "maximum", "moments", "sgd_update", "adam_update", "rmsprop_update",
            "adagrad_update", "adamax_update", "nadam_update", "radam_update", "adadelta_update")


def _helpers():
    """The update functions' GPU helpers: libdevice math and the GPU's fused multiply-add
    (the simulator's: the CPU formula in float64)."""
    h = dict(_launch._DEVICE_MATH)
    if "ffma" not in h:  # the simulator
        h["ffma"] = _sim_ffma
    return h


# the shared update functions as device functions (module attributes ``<name>_dev``)
_launch.bind(S, _UPDATES, _helpers(), __name__)

# --- kernel templates: ``f`` is the update, a pointer (buffer, offset, stride) per array; a
# state array with a false ``keep`` flag is a stand-in (the parameter itself): read, not written


def _two(p, po, ps, g, go, gs, a, ao, as_, n, keep_a, c):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        j, k = po + i * ps, ao + i * as_
        pi, ai = f(p[j], g[go + i * gs], a[k], *c)  # noqa: F821
        if keep_a:
            a[k] = ai
        p[j] = pi


def _three(p, po, ps, g, go, gs, a, ao, as_, b, bo, bs, n, keep_a, keep_b, c):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        j, k, m = po + i * ps, ao + i * as_, bo + i * bs
        pi, ai, bi = f(p[j], g[go + i * gs], a[k], b[m], *c)  # noqa: F821
        if keep_a:
            a[k] = ai
        if keep_b:
            b[m] = bi
        p[j] = pi


def _four(p, po, ps, g, go, gs, a, ao, as_, b, bo, bs, e, eo, es, n, keep_a, keep_b, keep_e, c):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        j, k, m, q = po + i * ps, ao + i * as_, bo + i * bs, eo + i * es
        pi, ai, bi, ei = f(p[j], g[go + i * gs], a[k], b[m], e[q], *c)  # noqa: F821
        if keep_a:
            a[k] = ai
        if keep_b:
            b[m] = bi
        if keep_e:
            e[q] = ei
        p[j] = pi


_K = {}


def _kernel(name, template):
    k = _K.get(name)
    if k is None:
        k = _K[name] = _launch.kernel(template, name, f=globals()[name + "_update_dev"])
    return k


def _launch_update(name, p, g, state, keep, consts):
    """Launch the update ``name`` over ``p`` and the ``state`` arrays (those whose ``keep``
    is false are stand-ins, not written)."""
    p = from_any(p)
    arrays = (*vec(p), *vec(g))
    for a in state:
        arrays += vec(a)
    template = (_two, _three, _four)[len(state) - 1]
    _launch.launch(_kernel(name, template), p.size, *arrays, p.size, *keep, consts)


def _lerp_weights(dt, w):
    """The weight of ``lerp_``, w - 1 and which form it takes (|w| < 0.5), in ``dt``."""
    s = _launch.scalar
    w_ = s(dt, w)
    return w_, w_ - s(dt, 1.0), abs(float(w_)) < 0.5


def adagrad_step(p, g, state_sum, step, lr, lr_decay, weight_decay, eps, maximize):
    c = S.adagrad_consts(count_step(step), lr, lr_decay)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("adagrad", p, g, (state_sum,), (True,),
                   (s(dt, c), s(dt, weight_decay), s(dt, eps), weight_decay != 0, bool(maximize)))


def adamax_step(p, g, m, u, step, lr, beta1, beta2, eps, weight_decay, maximize):
    c = S.adamax_consts(count_step(step), lr, beta1)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("adamax", p, g, (m, u), (True, True),
                   (s(dt, c), *_lerp_weights(dt, 1.0 - beta1), s(dt, beta2),
                    s(dt, weight_decay), s(dt, eps), weight_decay != 0, bool(maximize)))


def _moment_args(dt, lr, beta1, beta2, weight_decay, decoupled, maximize):
    """``moments``' arguments after the element's values."""
    s = _launch.scalar
    return (bool(maximize), weight_decay != 0, bool(decoupled), s(dt, 1.0 - lr * weight_decay),
            s(dt, weight_decay), *_lerp_weights(dt, 1.0 - beta1), s(dt, beta2),
            s(dt, 1.0 - beta2))


def nadam_step(p, g, m, v, step, mu_product, lr, beta1, beta2, eps, weight_decay,
               momentum_decay, decoupled, maximize):
    bias2, mu, mu_next = S.nadam_consts(count_step(step), beta1, beta2, momentum_decay)
    mu_product[0] = mu_product[0] * mu_product.dtype.type(mu)
    c1, c2 = S.nadam_coefs(lr, mu, mu_next, float(mu_product[0]))
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("nadam", p, g, (m, v), (True, True),
                   (s(dt, c1), s(dt, c2), s(dt, bias2), s(dt, eps),
                    *_moment_args(dt, lr, beta1, beta2, weight_decay, decoupled, maximize)))


def radam_step(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    bias1, rectify, rect, num = S.radam_consts(count_step(step), beta1, beta2)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("radam", p, g, (m, v), (True, True),
                   (s(dt, bias1), s(dt, lr), s(dt, 1.0), s(dt, num), s(dt, rect), bool(rectify),
                    s(dt, eps),
                    *_moment_args(dt, lr, beta1, beta2, weight_decay, decoupled, maximize)))


def adadelta_step(p, g, sq, acc, step, lr, rho, eps, weight_decay, maximize):
    count_step(step)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("adadelta", p, g, (sq, acc), (True, True),
                   (s(dt, rho), s(dt, 1.0 - rho), s(dt, weight_decay), s(dt, eps), s(dt, -lr),
                    weight_decay != 0, bool(maximize)))


def sgd_step(p, g, buf, lr, weight_decay, momentum, dampening, nesterov, maximize, first):
    """SGD (``sgd_update``); ``buf`` is a stand-in without momentum."""
    dt = from_any(p).dtype
    s = _launch.scalar
    has_mom = momentum != 0
    _launch_update("sgd", p, g, (buf,), (has_mom,),
                   (s(dt, lr), s(dt, weight_decay), s(dt, momentum), s(dt, 1.0 - dampening),
                    weight_decay != 0, has_mom, bool(nesterov), bool(maximize), bool(first)))


def adam_step(p, g, m, v, vmax, step, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad,
              maximize):
    """Adam / AdamW (``adam_update``); ``vmax`` is a stand-in without amsgrad."""
    neg_step_size, bias2_sqrt = S.adam_consts(count_step(step), lr, beta1, beta2)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("adam", p, g, (m, v, vmax), (True, True, bool(amsgrad)),
                   (bool(amsgrad), s(dt, neg_step_size), s(dt, bias2_sqrt), s(dt, eps),
                    *_moment_args(dt, lr, beta1, beta2, weight_decay, decoupled, maximize)))


def rmsprop_step(p, g, sq, buf, gavg, step, lr, alpha, eps, weight_decay, momentum, centered,
                 maximize):
    """RMSprop (``rmsprop_update``), counting the step; ``buf`` (without momentum) and
    ``gavg`` (not centered) are stand-ins."""
    count_step(step)
    dt = from_any(p).dtype
    s = _launch.scalar
    has_mom = momentum > 0
    _launch_update("rmsprop", p, g, (sq, buf, gavg), (True, has_mom, bool(centered)),
                   (s(dt, alpha), *_lerp_weights(dt, 1.0 - alpha), s(dt, weight_decay),
                    s(dt, momentum), s(dt, -lr), s(dt, eps), weight_decay != 0, has_mom,
                    bool(centered), bool(maximize)))
