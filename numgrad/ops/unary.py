"""Unary math ops, each declared once (see ``numgrad.ops.registry``): its formula, node,
derivative and variants. The backward rules that would take several ops (sqrt, sin, cos,
tanh, sigmoid) are themselves declared ops with one fused kernel and their own derivatives,
so every order of gradient comes from this file.

Formulas written here compile into the elementwise loop templates of ``numgrad.kernels``
(CPU ``@njit`` and CUDA device functions); a formula given as a string names a hand-tuned
kernel of ``numgrad.kernels.cpu.elementwise`` (vectorizable exp/tanh/sigmoid).
"""

import math

import numpy as np

from numgrad import _dtype
from numgrad._shape import wrap_dim
from numgrad.autograd.grad_mode import no_grad
from numgrad.autograd.graph import Node
from numgrad.kernels.scalar import like
from numgrad.ops import elementwise as ew
from numgrad.ops._util import EW, _wrap, dtype_of, edge
from numgrad.ops.inplace import apply_
from numgrad.ops.registry import declare, elementwise, inplace_of, op

_2_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LN10 = math.log(10.0)

# ----------------------------------------------------------------------------------------
# fused backward ops: f(grad, saved); declared first, the forward ops' rules call them
# ----------------------------------------------------------------------------------------


@elementwise(arity=2, formula="sqrt_bwd", node="SqrtBackwardBackward0", dtype="float", grad={
    # f = g / (2y): df/dg = 1 / (2y)
    "self": lambda grad, other: ew.div(grad, ew.mul(other, 2)),
    # df/dy = -g / (2 y^2)
    "other": lambda grad, self, other: ew.neg(ew.div(ew.mul(grad, self),
                                                     ew.mul(ew.mul(other, other), 2)))})
def sqrt_backward(g, y, p, q):
    """g / (2 sqrt(x)) from the saved result y = sqrt(x)."""


@elementwise(arity=2, formula="sin_bwd", node="SinBackwardBackward0", grad={
    # f = g cos(x): df/dg = cos(x)
    "self": lambda grad, other: ew.mul(grad, cos(other)),
    # df/dx = -g sin(x)
    "other": lambda grad, self, other: ew.neg(ew.mul(ew.mul(grad, self), sin(other)))})
def sin_backward(g, x, p, q):
    """g cos(x)."""


@elementwise(arity=2, formula="cos_bwd", node="CosBackwardBackward0", grad={
    # f = -g sin(x): df/dg = -sin(x)
    "self": lambda grad, other: ew.neg(ew.mul(grad, sin(other))),
    # df/dx = -g cos(x)
    "other": lambda grad, self, other: ew.neg(ew.mul(ew.mul(grad, self), cos(other)))})
def cos_backward(g, x, p, q):
    """-g sin(x)."""


@elementwise(arity=2, formula="tanh_bwd", node="TanhBackwardBackward0", grad={
    # f = g (1 - y^2): df/dg = 1 - y^2
    "self": lambda grad, other: tanh_backward(grad, other),
    # df/dy = -2 g y
    "other": lambda grad, self, other: ew.mul(ew.mul(grad, self), ew.mul(other, -2))})
def tanh_backward(g, y, p, q):
    """g (1 - y^2) from the saved result y = tanh(x)."""


@elementwise(arity=2, formula="sigmoid_bwd", node="SigmoidBackwardBackward0", grad={
    # f = g y (1 - y): df/dg = y (1 - y)
    "self": lambda grad, other: sigmoid_backward(grad, other),
    # df/dy = g (1 - 2y)
    "other": lambda grad, self, other: ew.mul(ew.mul(grad, self), ew.rsub(ew.mul(other, 2), 1))})
def sigmoid_backward(g, y, p, q):
    """g y (1 - y) from the saved result y = sigmoid(x)."""


@elementwise(arity=2, formula="relu_bwd", node="ThresholdBackwardBackward0", grad={
    # f = g [y > 0]: df/dg = [y > 0], df/dy = 0
    "self": lambda grad, other: threshold_backward(grad, other)})
def threshold_backward(g, y, p, q):
    """g where the saved result y = relu(x) is positive, else 0."""


@elementwise(arity=2, formula="abs_bwd", node="AbsBackwardBackward0", grad={
    # f = g sgn(x): df/dg = sgn(x), df/dx = 0
    "self": lambda grad, other: abs_backward(grad, other)})
def abs_backward(g, x, p, q):
    """g sgn(x)."""


@elementwise(arity=2, formula="clamp_bwd", node="ClampBackwardBackward0", params=("lo", "hi"),
             grad={
                 # f = g [lo <= x <= hi]: df/dg = [lo <= x <= hi], df/dx = 0
                 "self": lambda grad, other, lo, hi: clamp_backward(grad, other, lo, hi)})
def clamp_backward(g, x, p, q):
    """g where lo <= x <= hi (p = lo, q = hi), else 0."""


@elementwise(arity=2, formula="pow_s_bwd", node="PowScalarBackwardBackward0",
             params=("exponent",), grad={
                 # f = g e x^(e-1): df/dg = e x^(e-1)
                 "self": lambda grad, other, exponent: pow_backward(grad, other, exponent),
                 # df/dx = g e (e-1) x^(e-2)
                 "other": lambda grad, self, other, exponent: ew.mul(
                     pow_backward(ew.mul(grad, self), other, exponent - 1), exponent)})
def pow_backward(g, x, p, q):
    """g p x^(p-1) for a number exponent p."""


@elementwise(arity=2, formula="rpow_s_bwd", node="RpowBackwardBackward0", params=("base",),
             grad={
                 # f = g s^x log(s): df/dg = s^x log(s)
                 "self": lambda grad, other, base: rpow_backward(grad, other, base),
                 # df/dx = g s^x log(s)^2
                 "other": lambda grad, self, other, base: ew.mul(
                     rpow_backward(ew.mul(grad, self), other, base), math.log(base))})
def rpow_backward(g, x, p, q):
    """g s^x log(s) for a number base s = p."""


@elementwise(arity=2, formula="softplus_bwd", node="SoftplusBackwardBackward0",
             params=("beta", "threshold"), grad={
                 # f = g s(b x) where b x <= t, else g: df/dg = that factor
                 "self": lambda grad, other, beta, threshold: softplus_backward(
                     grad, other, beta, threshold),
                 # df/dx = g b s(b x) (1 - s(b x)) where b x <= t, else 0
                 "other": lambda grad, self, other, beta, threshold: _softplus_curvature(
                     ew.mul(grad, self), other, beta, threshold)})
def softplus_backward(g, x, p, q):
    """g sigmoid(beta x), g where beta x > threshold (p = beta, q = threshold)."""


def _softplus_curvature(g, x, beta, threshold):
    bx = ew.mul(x, beta)
    return ew.where(ew.gt(bx, threshold), 0.0,
                    ew.mul(sigmoid_backward(g, sigmoid(bx)), beta))


# ----------------------------------------------------------------------------------------
# forward ops
# ----------------------------------------------------------------------------------------


def _float_only(kernel):
    def check(dt):
        if dt._kind != 2:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._legacy}'")
    return check


def _no_bool(message, error=RuntimeError):
    def check(dt):
        if dt is _dtype.bool_:
            raise error(message)
    return check


# d/dx (-x) = -1
@elementwise(formula="neg", node="NegBackward0", aliases=("negative",),
             grad=lambda grad: ew.neg(grad), check=_no_bool(
                 "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                 "trying to invert a mask, use the `~` or `logical_not()` operator instead."))
def neg(x, p, q):
    """-x."""


# d/dx |x| = sgn(x)
@elementwise(formula="abs", node="AbsBackward0", aliases=("absolute",),
             grad=lambda grad, self: abs_backward(grad, self),
             check=_no_bool("\"abs_cpu\" not implemented for 'Bool'", NotImplementedError))
def abs(x, p, q):  # noqa: A001
    """|x| (|-0| = 0)."""


# d/dx relu(x) = [x > 0]
@elementwise(formula="relu", node="ReluBackward0",
             grad=lambda grad, result: threshold_backward(grad, result),
             check=_no_bool("Boolean inputs not supported for relu"),
             variants=("function", "method", "inplace", "inplace_function"))
def relu(x, p, q):
    """max(x, 0); nan stays nan."""


# d/dx sign(x) = 0
@elementwise(formula="sign", node="SignBackward0", grad=lambda grad: ew.mul(grad, 0),
             variants=("function", "method", "inplace", "out"))
def sign(x, p, q):
    """-1, 0 or 1 (0 for nan and -0)."""


# d/dx exp(x) = exp(x)
@elementwise(formula="exp", node="ExpBackward0", dtype="float",
             grad=lambda grad, result: ew.mul(grad, result))
def exp(x, p, q):
    """e^x."""


# d/dx log(x) = 1 / x
@elementwise(formula="log", node="LogBackward0", dtype="float",
             grad=lambda grad, self: ew.div(grad, self))
def log(x, p, q):
    """Natural logarithm."""


# d/dx sqrt(x) = 1 / (2 sqrt(x))
@elementwise(formula="sqrt", node="SqrtBackward0", dtype="float",
             grad=lambda grad, result: sqrt_backward(grad, result))
def sqrt(x, p, q):
    """Square root."""


# d/dx sin(x) = cos(x)
@elementwise(formula="sin", node="SinBackward0", dtype="float",
             grad=lambda grad, self: sin_backward(grad, self))
def sin(x, p, q):
    """Sine."""


# d/dx cos(x) = -sin(x)
@elementwise(formula="cos", node="CosBackward0", dtype="float",
             grad=lambda grad, self: cos_backward(grad, self))
def cos(x, p, q):
    """Cosine."""


# d/dx tanh(x) = 1 - tanh(x)^2
@elementwise(formula="tanh", node="TanhBackward0", dtype="float",
             grad=lambda grad, result: tanh_backward(grad, result))
def tanh(x, p, q):
    """Hyperbolic tangent."""


# d/dx sigmoid(x) = sigmoid(x) (1 - sigmoid(x))
@elementwise(formula="sigmoid", node="SigmoidBackward0", dtype="float",
             grad=lambda grad, result: sigmoid_backward(grad, result))
def sigmoid(x, p, q):
    """1 / (1 + e^-x), stable on both sides."""


# d/dx (1/x) = -1/x^2 = -r^2
@elementwise(formula="reciprocal", node="ReciprocalBackward0", dtype="float",
             grad=lambda grad, result: ew.mul(grad, ew.neg(ew.mul(result, result))))
def reciprocal(x, p, q):
    """1 / x."""


def _gaussian(grad, x, scale):
    """grad * scale * e^(-x^2): the derivative of erf (scale 2/sqrt(pi)) and erfc (-2/sqrt(pi))."""
    return ew.mul(grad, ew.mul(exp(ew.neg(ew.mul(x, x))), scale))


# d/dx erf(x) = 2/sqrt(pi) e^(-x^2)
@elementwise(formula="erf", node="ErfBackward0", dtype="float",
             grad=lambda grad, self: _gaussian(grad, self, _2_SQRT_PI))
def erf(x, p, q):
    """The error function (float32: a vectorizable polynomial, float64: libm's)."""


# d/dx erfc(x) = -2/sqrt(pi) e^(-x^2)
@elementwise(node="ErfcBackward0", dtype="float",
             grad=lambda grad, self: _gaussian(grad, self, -_2_SQRT_PI))
def erfc(x, p, q):
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1."""
    return math.erfc(x)


# d/dx log10(x) = 1 / (x ln 10)
@elementwise(node="Log10Backward0", dtype="float",
             grad=lambda grad, self: ew.div(grad, ew.mul(self, _LN10)))
def log10(x, p, q):
    """Base-10 logarithm."""
    return math.log10(x)


# d/dx log(1 + x) = 1 / (1 + x)
@elementwise(node="Log1PBackward0", dtype="float",
             grad=lambda grad, self: ew.div(grad, ew.add(self, 1)))
def log1p(x, p, q):
    """log(1 + x), accurate for small x."""
    return math.log1p(x)


# d/dx (e^x - 1) = e^x = result + 1
@elementwise(node="Expm1Backward0", dtype="float",
             grad=lambda grad, result: ew.mul(grad, ew.add(result, 1)))
def expm1(x, p, q):
    """e^x - 1, accurate for small x."""
    return math.expm1(x)


# d/dx x^(-1/2) = -x^(-3/2) / 2 = -result^3 / 2
@elementwise(node="RsqrtBackward0", dtype="float", grad=lambda grad, result: ew.mul(
    grad, ew.mul(ew.mul(result, ew.mul(result, result)), -0.5)))
def rsqrt(x, p, q):
    """1 / sqrt(x)."""
    return like(x, 1.0) / math.sqrt(x)


# d/dx log(1 + e^(b x)) / b = sigmoid(b x); 1 where b x > threshold (there the op is x)
@elementwise(formula="softplus", node="SoftplusBackward0", variants=("functional",),
             params={"beta": 1.0, "threshold": 20.0}, check=_float_only("softplus_cpu"),
             grad=lambda grad, self, beta, threshold: softplus_backward(
                 grad, self, beta, threshold))
def softplus(x, p, q):
    """log(1 + e^(beta x)) / beta, and x where beta x > threshold
    (``numgrad.nn.functional.softplus``)."""


# ----------------------------------------------------------------------------------------
# inverse and hyperbolic trigonometry
# ----------------------------------------------------------------------------------------


# d/dx asin(x) = 1 / sqrt(1 - x^2)
@elementwise(node="AsinBackward0", dtype="float", aliases=("arcsin",),
             grad=lambda grad, self: ew.div(grad, sqrt(ew.rsub(ew.mul(self, self), 1))))
def asin(x, p, q):
    """Inverse sine (nan outside [-1, 1])."""
    return math.asin(x) if -1.0 <= x <= 1.0 else like(x, math.nan)


# d/dx acos(x) = -1 / sqrt(1 - x^2)
@elementwise(node="AcosBackward0", dtype="float", aliases=("arccos",),
             grad=lambda grad, self: ew.neg(ew.div(grad, sqrt(ew.rsub(ew.mul(self, self), 1)))))
def acos(x, p, q):
    """Inverse cosine (nan outside [-1, 1])."""
    return math.acos(x) if -1.0 <= x <= 1.0 else like(x, math.nan)


# d/dx atan(x) = 1 / (1 + x^2)
@elementwise(node="AtanBackward0", dtype="float", aliases=("arctan",),
             grad=lambda grad, self: ew.div(grad, ew.add(ew.mul(self, self), 1)))
def atan(x, p, q):
    """Inverse tangent."""
    return math.atan(x)


# d/dx sinh(x) = cosh(x)
@elementwise(node="SinhBackward0", dtype="float",
             grad=lambda grad, self: ew.mul(grad, cosh(self)))
def sinh(x, p, q):
    """Hyperbolic sine."""
    return math.sinh(x)


# d/dx cosh(x) = sinh(x)
@elementwise(node="CoshBackward0", dtype="float",
             grad=lambda grad, self: ew.mul(grad, sinh(self)))
def cosh(x, p, q):
    """Hyperbolic cosine."""
    return math.cosh(x)


# d/dx asinh(x) = 1 / sqrt(x^2 + 1)
@elementwise(node="AsinhBackward0", dtype="float", aliases=("arcsinh",),
             grad=lambda grad, self: ew.div(grad, sqrt(ew.add(ew.mul(self, self), 1))))
def asinh(x, p, q):
    """Inverse hyperbolic sine."""
    return math.asinh(x)


# d/dx acosh(x) = 1 / sqrt(x^2 - 1)
@elementwise(node="AcoshBackward0", dtype="float", aliases=("arccosh",),
             grad=lambda grad, self: ew.div(grad, sqrt(ew.sub(ew.mul(self, self), 1))))
def acosh(x, p, q):
    """Inverse hyperbolic cosine (nan below 1)."""
    return math.acosh(x) if x >= 1.0 else like(x, math.nan)


# d/dx atanh(x) = 1 / (1 - x^2)
@elementwise(node="AtanhBackward0", dtype="float", aliases=("arctanh",),
             grad=lambda grad, self: ew.div(grad, ew.rsub(ew.mul(self, self), 1)))
def atanh(x, p, q):
    """Inverse hyperbolic tangent (nan outside [-1, 1], +-inf at +-1)."""
    if x == 1.0 or x == -1.0:
        return like(x, math.copysign(math.inf, float(x)))
    return math.atanh(x) if -1.0 < x < 1.0 else like(x, math.nan)


class _InplaceNoDerivative(Node):
    """The node PyTorch records for ``asinh_``, ``acosh_`` and ``atanh_``
    (``AsinhBackward1``, ...): it has no derivative, and backward raises PyTorch's error."""

    __slots__ = ()
    _meta_only = True
    _op = ""

    def _backward(self, g):
        raise NotImplementedError(
            f"the derivative for 'inplace version of {self._op}' is not implemented.")


def _inplace_without_derivative(op):
    """Register ``op_`` (method and function): ``op`` written in place, recording
    ``<Op>Backward1``, whose backward raises, where a graph is recorded."""
    node_cls = type(op.__name__.capitalize() + "Backward1", (_InplaceNoDerivative,),
                    {"__slots__": (), "_op": op.__name__})

    def forward(src):
        with no_grad():
            out = op(src)
        return ew._record(out, node_cls((edge(src),)), (src,), out._data.shape, dtype_of(out))

    @inplace_of(op.__name__, nodes=(node_cls,))
    def inplace(self):
        return apply_(self, forward)
    inplace.__name__ = op.__name__ + "_"
    inplace.__doc__ = f"In-place {op.__name__} (``{node_cls.__name__}``, no derivative)."
    return node_cls


AsinhBackward1 = _inplace_without_derivative(asinh)
AcoshBackward1 = _inplace_without_derivative(acosh)
AtanhBackward1 = _inplace_without_derivative(atanh)


# ----------------------------------------------------------------------------------------
# the gamma function's logarithm and its derivatives (kernels: numgrad.kernels.cpu.special)
# ----------------------------------------------------------------------------------------

_VARIANTS = ("function", "method", "inplace", "out")


def _polygamma_order(n):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return int(n)


# d/dx psi^(n)(x) = psi^(n+1)(x)
@elementwise(name="polygamma", formula="polygamma", node="PolygammaBackward0", dtype="float",
             params={"n": 0}, variants=("function", "method", "inplace"),
             grad=lambda grad, self, n: ew.mul(grad, _polygamma(self, n + 1)))
def _polygamma(x, p, q):
    """psi^(n)(x), the n-th derivative of digamma (``input.polygamma(n)``)."""


def polygamma(n, input, *, out=None):
    """psi^(n)(input), the n-th derivative of digamma (``PolygammaBackward0``)."""
    n = _polygamma_order(n)
    if out is not None:
        from numgrad.ops.registry import write_out
        return write_out(_polygamma, out, input, n)
    return _polygamma(input, n)


def _polygamma_method(self, n):
    """``self.polygamma(n)``: the function's arguments in the method's order."""
    return _polygamma(self, _polygamma_order(n))


def _polygamma_inplace(self, n):
    """In-place ``polygamma`` (``PolygammaBackward0``)."""
    n = _polygamma_order(n)
    return apply_(self, lambda x: _polygamma(x, n))


_polygamma.opdef.fn, _polygamma.opdef.method = polygamma, _polygamma_method
_polygamma.opdef.inplace_fn = _polygamma_inplace
_polygamma_inplace.__name__ = "polygamma_"


# d/dx log|Gamma(x)| = psi(x)
@elementwise(formula="lgamma", node="LgammaBackward0", dtype="float", variants=_VARIANTS,
             grad=lambda grad, self: ew.mul(grad, digamma(self)))
def lgamma(x, p, q):
    """log |Gamma(x)| (inf at 0, the negative integers and +-inf)."""


# d/dx psi(x) = psi'(x)
@elementwise(formula="digamma", node="DigammaBackward0", dtype="float", variants=_VARIANTS,
             grad=lambda grad, self: ew.mul(grad, _polygamma(self, 1)))
def digamma(x, p, q):
    """psi(x), the derivative of log Gamma (nan at the negative integers)."""


# ----------------------------------------------------------------------------------------
# nan_to_num: PyTorch's NanToNumBackward0 (the gradient passes where the input is finite)
# ----------------------------------------------------------------------------------------


def _number(name, v, default):
    if v is None:
        return default
    if not isinstance(v, (int, float, np.number)):
        raise TypeError(f"nan_to_num(): argument '{name}' must be float, not {type(v).__name__}")
    return float(v)


# d/dx nan_to_num(x) = [x is finite]
@op(node="NanToNumBackward0", variants=("function", "method", "inplace", "inplace_function"),
    grads={"self": lambda grad, self: ew.mul(grad, ew.isfinite(self))})
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """nan, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the
    dtype's largest and lowest finite values); integer and bool tensors are copied."""
    x = input._data
    nan = _number("nan", nan, 0.0)
    if x.dtype.kind != "f":
        _number("posinf", posinf, 0.0), _number("neginf", neginf, 0.0)
        return EW.unary(EW.copy, x, x.dtype), {}
    big = float(np.finfo(x.dtype).max)
    hi = _number("posinf", posinf, big)
    lo = np.asarray(_number("neginf", neginf, -big), x.dtype)
    return EW.binary(EW.nan_to_num, x, lo, x.dtype, x.shape, nan, hi), {}


# ----------------------------------------------------------------------------------------
# infinity tests: bool results, no gradient
# ----------------------------------------------------------------------------------------


@declare()
def isinf(input):
    """+-inf elements (a bool tensor; integers are never infinite)."""
    return _wrap(EW.unary(EW.isinf, input._data, np.bool_))


@declare()
def isposinf(input):
    """+inf elements (a bool tensor)."""
    return _wrap(EW.unary(EW.isposinf, input._data, np.bool_))


@declare()
def isneginf(input):
    """-inf elements (a bool tensor)."""
    return _wrap(EW.unary(EW.isneginf, input._data, np.bool_))


# ----------------------------------------------------------------------------------------
# diff: a composite of slices and sub, as PyTorch's (its nodes are SubBackward0 over two
# SliceBackward0)
# ----------------------------------------------------------------------------------------


@declare()
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim``, after joining ``prepend`` and ``append``
    (bool input: exclusive or of neighbours)."""
    from numgrad.ops.shape import cat
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.dim())
    if prepend is not None or append is not None:
        input = cat([t for t in (prepend, input, append) if t is not None], d)
    if n == 0:
        from numgrad._factories import empty_like
        return empty_like(input).copy_(input)  # PyTorch's copy: a CopyBackwards node
    head, tail = (slice(None),) * d + (slice(1, None),), (slice(None),) * d + (slice(None, -1),)
    for _ in range(n):
        if input.shape[d] == 0:
            break
        a, b = input[head], input[tail]
        input = ew.logical_xor(a, b) if input.dtype is _dtype.bool_ else ew.sub(a, b)
    return input
