"""Fused optimizer updates on the GPU, from the formulas the CPU kernels use
(``numgrad.kernels.optim_steps``; same names and arguments as ``numgrad.kernels.cpu.optim``,
over ``CudaArray`` data): one thread per element of a flat parameter and its state runs the
shared ``*_update`` function as a device function, with the scalars converted to the parameter
dtype first, as the CPU kernels convert them.

The step count stays a host array beside CUDA parameters (PyTorch keeps ``state["step"]`` on
the CPU unless ``capturable``): ``count_step`` increments it and the shared ``*_consts``
functions derive the step's numbers on the host, with the CPU kernels' float64 arithmetic."""

import types

from numba import cuda

from numgrad._compile import tape as _tape
from numgrad.kernels import optim_steps as S
from numgrad.kernels.cpu import _fastmath
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


_UPDATES = ("lerp2", "maximum", "moments", "adagrad_update", "adamax_update", "nadam_update",
            "radam_update", "adadelta_update")


def _bind():
    """The shared update functions as device functions (module attributes ``<name>_dev``, so
    the PTX check rebuilds them by name), their helpers bound to the device forms and ``ffma``
    to the GPU's fused multiply-add (the simulator's: the CPU formula in float64)."""
    g = dict(S.__dict__)
    g.update(_launch._DEVICE_MATH)
    if "ffma" not in _launch._DEVICE_MATH:  # the simulator
        g["ffma"] = _fastmath.ffma
    for name in _UPDATES:
        fn = getattr(S, name)
        copy = types.FunctionType(fn.__code__, g, name, fn.__defaults__)
        d = g[name] = cuda.jit(device=True)(copy)
        globals()[name + "_dev"] = d
        _launch._RECIPES[id(d)] = ("attr", __name__, name + "_dev")


_bind()

# --- kernel templates: ``f`` is the update, a pointer (buffer, offset, stride) per array ---


def _two(p, po, ps, g, go, gs, a, ao, as_, n, c):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        j, k = po + i * ps, ao + i * as_
        p[j], a[k] = f(p[j], g[go + i * gs], a[k], *c)  # noqa: F821


def _three(p, po, ps, g, go, gs, a, ao, as_, b, bo, bs, n, c):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        j, k, m = po + i * ps, ao + i * as_, bo + i * bs
        p[j], a[k], b[m] = f(p[j], g[go + i * gs], a[k], b[m], *c)  # noqa: F821


_K = {}


def _kernel(name):
    k = _K.get(name)
    if k is None:
        template = _two if name == "adagrad" else _three
        k = _K[name] = _launch.kernel(template, name, f=globals()[name + "_update_dev"])
    return k


def _launch_update(name, p, g, a, b, consts):
    p = from_any(p)
    arrays = (*_v(p), *_v(g), *_v(a)) + (() if b is None else _v(b))
    _launch.launch(_kernel(name), p.size, *arrays, p.size, consts)


def _lerp_weights(dt, w):
    """The weight of ``lerp_``, w - 1 and which form it takes (|w| < 0.5), in ``dt``."""
    s = _launch.scalar
    w_ = s(dt, w)
    return w_, w_ - s(dt, 1.0), abs(float(w_)) < 0.5


def adagrad_step(p, g, state_sum, step, lr, lr_decay, weight_decay, eps, maximize):
    c = S.adagrad_consts(count_step(step), lr, lr_decay)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("adagrad", p, g, state_sum, None,
                   (s(dt, c), s(dt, weight_decay), s(dt, eps), weight_decay != 0, bool(maximize)))


def adamax_step(p, g, m, u, step, lr, beta1, beta2, eps, weight_decay, maximize):
    c = S.adamax_consts(count_step(step), lr, beta1)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("adamax", p, g, m, u,
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
    _launch_update("nadam", p, g, m, v,
                   (s(dt, c1), s(dt, c2), s(dt, bias2), s(dt, eps),
                    *_moment_args(dt, lr, beta1, beta2, weight_decay, decoupled, maximize)))


def radam_step(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    bias1, rectify, rect, num = S.radam_consts(count_step(step), beta1, beta2)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("radam", p, g, m, v,
                   (s(dt, bias1), s(dt, lr), s(dt, 1.0), s(dt, num), s(dt, rect), bool(rectify),
                    s(dt, eps),
                    *_moment_args(dt, lr, beta1, beta2, weight_decay, decoupled, maximize)))


def adadelta_step(p, g, sq, acc, step, lr, rho, eps, weight_decay, maximize):
    count_step(step)
    dt = from_any(p).dtype
    s = _launch.scalar
    _launch_update("adadelta", p, g, sq, acc,
                   (s(dt, rho), s(dt, 1.0 - rho), s(dt, weight_decay), s(dt, eps), s(dt, -lr),
                    weight_decay != 0, bool(maximize)))
