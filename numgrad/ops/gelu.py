"""GELU as declared ops: ``gelu`` (``GeluBackward0``) and its fused backward
``gelu_backward`` / ``gelu_tanh_backward`` (``GeluBackwardBackward0``), whose own derivatives
are numgrad ops, so double backward needs no second copy of the math. The kernels are the
elementwise formulas ``gelu``, ``gelu_tanh``, ``gelu_bwd``, ``gelu_tanh_bwd``. Reached through
``numgrad.nn.functional.gelu`` (variant ``"functional"``), which checks the arguments."""

import math

from numgrad.ops import elementwise as ew
from numgrad.ops import unary as un
from numgrad.ops._util import EW, dtype_of
from numgrad.ops.registry import elementwise, op

_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_A = 0.044715


# gelu''(x) = phi(x) (2 - x^2), phi the standard normal density
def _second(x):
    x2 = ew.mul(x, x)
    return ew.mul(ew.mul(un.exp(ew.mul(x2, -0.5)), _INV_SQRT_2PI), ew.rsub(x2, 2.0))


# with t = tanh(u), u = c (x + a x^3): gelu''(x) = (1 - t^2) (u' + x (u'' - 2 t u'^2) / 2),
# u' = c (1 + 3 a x^2), u'' = 6 a c x
def _second_tanh(x):
    x2 = ew.mul(x, x)
    t = un.tanh(ew.mul(ew.add(x, ew.mul(ew.mul(x2, x), _A)), _SQRT_2_PI))
    du = ew.mul(ew.add(ew.mul(x2, 3 * _A), 1.0), _SQRT_2_PI)
    d2u = ew.mul(x, 6 * _A * _SQRT_2_PI)
    inner = ew.sub(d2u, ew.mul(ew.mul(t, ew.mul(du, du)), 2.0))
    return ew.mul(ew.rsub(ew.mul(t, t), 1.0), ew.add(du, ew.mul(ew.mul(x, inner), 0.5)))


@elementwise(arity=2, formula="gelu_bwd", node="GeluBackwardBackward0", grad={
    # f = g gelu'(x): df/dg = gelu'(x), df/dx = g gelu''(x)
    "self": lambda grad, other: gelu_backward(grad, other),
    "other": lambda grad, self, other: ew.mul(ew.mul(grad, self), _second(other))})
def gelu_backward(g, x, p, q):
    """g (Phi(x) + x phi(x))."""


@elementwise(arity=2, formula="gelu_tanh_bwd", node="GeluBackwardBackward0", grad={
    # f = g gelu'(x) (tanh form): df/dg = gelu'(x), df/dx = g gelu''(x)
    "self": lambda grad, other: gelu_tanh_backward(grad, other),
    "other": lambda grad, self, other: ew.mul(ew.mul(grad, self), _second_tanh(other))})
def gelu_tanh_backward(g, x, p, q):
    """g gelu'(x) of the tanh approximation."""


def _gelu_grad(grad, self, approximate):
    return (gelu_tanh_backward if approximate == "tanh" else gelu_backward)(grad, self)


# d/dx gelu(x) = Phi(x) + x phi(x) (the tanh form: gelu_tanh_backward)
@op(node="GeluBackward0", variants=("functional",), grads={"self": _gelu_grad})
def gelu(input, approximate="none"):
    """x Phi(x), or its tanh approximation; the checks live in ``nn.functional.gelu``."""
    kernel = EW.gelu_tanh if approximate == "tanh" else EW.gelu
    return EW.unary(kernel, input._data, dtype_of(input).np), {"approximate": approximate}
