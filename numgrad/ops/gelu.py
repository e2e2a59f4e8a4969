"""GELU as declared ops: ``gelu`` (``GeluBackward0``) and its fused backward
``gelu_backward`` / ``gelu_tanh_backward`` (``GeluBackwardBackward0``), whose own derivatives
are numgrad ops, so double backward needs no second copy of the math. The kernels are the
elementwise formulas ``gelu``, ``gelu_tanh``, ``gelu_bwd``, ``gelu_tanh_bwd``. A forward on
host float data that records the node also writes the slope gelu'(x) (``kernels/cpu/gelu``,
the same values), so a backward that builds no graph is one multiply. Reached through
``numgrad.nn.functional.gelu`` (variant ``"functional"``), which checks the arguments."""

import math

import numpy as np

from numgrad import _arrays
from numgrad.kernels import LazyKernels
from numgrad.ops import elementwise as ew
from numgrad.ops import unary as un
from numgrad.ops._util import EW, _wrap, dtype_of, state
from numgrad.ops.registry import elementwise, op

_HOST = LazyKernels("gelu")
_SLOPE_TYPES = (np.dtype(np.float32), np.dtype(np.float64))

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


def _gelu_grad(grad, self, approximate, slope):
    if slope is not None and not state.enabled and grad.dtype == self.dtype:
        return ew.mul(grad, _wrap(slope))  # g gelu'(x), gelu'(x) saved by the forward
    return (gelu_tanh_backward if approximate == "tanh" else gelu_backward)(grad, self)


def _slope_pays(input, x):
    """Whether the forward also writes gelu'(x): host float32/float64 data, C-contiguous,
    when a node will be recorded."""
    return (state.enabled and input._requires_grad and x.__class__ is np.ndarray
            and x.dtype in _SLOPE_TYPES and x.flags.c_contiguous and dtype_of(input).np == x.dtype)


# d/dx gelu(x) = Phi(x) + x phi(x) (the tanh form: gelu_tanh_backward)
@op(node="GeluBackward0", variants=("functional",), grads={"self": _gelu_grad},
    save=("self", "approximate", "slope"))
def gelu(input, approximate="none"):
    """x Phi(x), or its tanh approximation; the checks live in ``nn.functional.gelu``."""
    x = input._data
    if _slope_pays(input, x):
        out = _arrays.empty(x, x.shape, x.dtype)
        slope = _arrays.empty(x, x.shape, x.dtype)
        _HOST.gelu_with_slope(x.reshape(-1), approximate, out.reshape(-1), slope.reshape(-1))
        return out, {"approximate": approximate, "slope": slope}
    kernel = EW.gelu_tanh if approximate == "tanh" else EW.gelu
    return EW.unary(kernel, input._data, dtype_of(input).np), {"approximate": approximate,
                                                               "slope": None}
