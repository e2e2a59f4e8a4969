"""GELU's forward that also writes its slope gelu'(x), for a forward whose backward will need
it: the backward is then one multiply instead of the erf (or tanh) and exp again. The
formulas are ``elementwise.gelu`` / ``gelu_bwd`` (and the tanh forms) term for term, so the
values are theirs bit for bit: out = x/2 (1 + erf(x/sqrt 2)), slope = Phi(x) + x phi(x),
and g slope is ``gelu_bwd``'s g (Phi(x) + x phi(x))."""

from numba import prange

from numgrad.kernels._jit import inline, serial_twin, specialize
from numgrad.kernels._parallel import ELEMENTWISE, pick
from numgrad.kernels.cpu._fastmath import ferf, fexp, ftanh
from numgrad.kernels.cpu._scalar import like


# gelu(x) = x Phi(x); gelu'(x) = Phi(x) + x phi(x)
@inline
def _erf_form(x):
    half, one = like(x, 0.5), like(x, 1.0)
    e = ferf(x * like(x, 0.7071067811865476))
    pdf = fexp(x * x * like(x, -0.5)) * like(x, 0.3989422804014327)
    return x * half * (one + e), half * (one + e) + x * pdf


# gelu(x) = x (1 + t) / 2, t = tanh(u), u = c (x + a x^3);
# gelu'(x) = (1 + t) / 2 + x (1 - t^2) u' / 2, u' = c (1 + 3 a x^2)
@inline
def _tanh_form(x):
    half, one = like(x, 0.5), like(x, 1.0)
    c = like(x, 0.7978845608028654)
    t = ftanh(c * (x + like(x, 0.044715) * x * x * x))
    du = c * (one + like(x, 0.134145) * x * x)
    return half * x * (one + t), half * (one + t) + half * x * (one - t * t) * du


def _loop(x, out, slope):
    for i in range(x.size):
        out[i], slope[i] = f(x[i])  # noqa: F821


def _loop_par(x, out, slope):
    for i in prange(x.size):
        out[i], slope[i] = f(x[i])  # noqa: F821


def _pair(name, form):
    serial = specialize(_loop, name, f=form)
    return serial, serial_twin(specialize(_loop_par, name, {"parallel": True}, f=form), serial)


_KERNELS = {"none": _pair("gelu", _erf_form), "tanh": _pair("gelu_tanh", _tanh_form)}


def gelu_with_slope(x, approximate, out, slope):
    """out = gelu(x) and slope = gelu'(x) for C-contiguous 1-D float arrays of one size."""
    if x.size:
        pick(*_KERNELS[approximate], x.size, ELEMENTWISE)(x, out, slope)
