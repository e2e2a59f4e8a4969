"""Activation ops of ``numgrad.nn.functional`` (elu, celu, hardtanh, hardswish, ...), each
declared once with PyTorch's node name; their derivatives are written with existing ops (no
extra kernels), with PyTorch's value at every kink. Reached through ``numgrad.nn.functional``
(variant ``"functional"``), which parses the arguments; their value and dtype checks and
in-place forms are ``numgrad.ops.nn_activation``.
"""

import math

import numpy as np

from numgrad import _arrays, _dtype
from numgrad._shape import wrap_dim
from numgrad.autograd.grad_mode import no_grad
from numgrad.kernels.scalar import like
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import _wrap
from numgrad.ops.registry import elementwise, op

_F = ("functional",)
_SIXTH = float(np.float32(1.0 / 6.0))


def _float_only(kernel):
    def check(dt):
        if dt._kind != 2:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._legacy}'")
    return check


def _no_bool(error):
    def check(dt):
        if dt is _dtype.bool_:
            raise error
    return check


# d/dx elu = scale where x > 0, else alpha scale e^x (the negative side at x = 0)
@elementwise(node="EluBackward0", variants=_F, params={"alpha": 1.0, "scale": 1.0},
             check=_float_only("elu_cpu"), grad=lambda grad, self, alpha, scale: ew.where(
                 ew.gt(self, 0), ew.mul(grad, scale),
                 ew.mul(grad, ew.mul(un.exp(self), alpha * scale))))
def elu(x, p, q):
    """scale x where x > 0, else alpha scale (e^x - 1) (p = alpha, q = scale; selu's too)."""
    if x > 0:
        return x * like(x, q)
    return math.expm1(x) * like(x, p * q)


def _celu_grad(grad, self, alpha):
    # d/dx celu = 1 where x > 0, else e^(x / alpha); PyTorch takes 1/alpha of alpha rounded
    # to float32 here (and alpha itself as given)
    inv = 1.0 / float(np.float32(alpha))
    return ew.where(ew.gt(self, 0), grad,
                    ew.mul(ew.mul(grad, inv * alpha), un.exp(ew.mul(self, inv))))


@elementwise(node="CeluBackward0", variants=_F, params={"alpha": 1.0},
             check=_float_only("elu_cpu"), grad=_celu_grad)
def celu(x, p, q):
    """x where x > 0, else alpha (e^(x / alpha) - 1) (p = alpha)."""
    if x > 0:
        return x
    return math.expm1(x * like(x, 1.0 / p)) * like(x, p)


def _outside(grad, self, lambd):
    """grad where |x| > lambd (0 on the band's closed edges), nan passing through."""
    return ew.where(ew.le(ew.abs(self), lambd), 0.0, grad)


# d/dx hardshrink = [|x| > lambd]
@elementwise(node="HardshrinkBackward0", variants=_F, params={"lambd": 0.5},
             check=_float_only("hardshrink_cpu"), grad=_outside)
def hardshrink(x, p, q):
    """0 for -lambd <= x <= lambd, else x (p = lambd)."""
    if x >= -p and x <= p:
        return like(x, 0)
    return x


# d/dx softshrink = [|x| > lambd]
@elementwise(node="SoftshrinkBackward0", variants=_F, params={"lambd": 0.5},
             check=_float_only("softshrink_check"), grad=_outside)
def softshrink(x, p, q):
    """x - lambd above lambd, x + lambd below -lambd, else 0 (nan stays nan; p = lambd)."""
    if x > p:
        return x - like(x, p)
    if x < -p:
        return x + like(x, p)
    return x * like(x, 0)


def _inside(grad, x, lo, hi, value):
    """grad * value where lo < x < hi, else 0 (nan passes grad * value)."""
    out = ew.where(ew.logical_or(ew.le(x, lo), ew.ge(x, hi)), 0.0, grad)
    return out if value == 1 else ew.mul(out, value)


# d/dx hardtanh = [min < x < max]
@elementwise(node="HardtanhBackward0", variants=_F, params={"min_val": -1.0, "max_val": 1.0},
             check=_no_bool(RuntimeError("Bool inputs not supported for hardtanh")),
             grad=lambda grad, self, min_val, max_val: _inside(grad, self, min_val, max_val, 1))
def hardtanh(x, p, q):
    """min(max(x, min_val), max_val) (p, q): max_val wins when min_val > max_val, as in
    PyTorch's in-place form; nan stays nan (relu6's too)."""
    y = like(x, p) if x < p else x
    return like(x, q) if y > q else y


# d/dx relu6(x + 3) / 6 = 1/6 for -3 < x < 3 (PyTorch's 1/6 is float32's in every dtype)
@elementwise(node="HardsigmoidBackward0", variants=_F, check=_float_only("hardsigmoid_cpu"),
             grad=lambda grad, self: _inside(grad, self, -3.0, 3.0, _SIXTH))
def hardsigmoid(x, p, q):
    """min(max(x + 3, 0), 6) / 6."""
    y = x + like(x, 3)
    if y < 0:
        return like(x, 0)
    if y > 6:
        return like(x, 1)
    return y / like(x, 6)


# d/dx x relu6(x + 3) / 6 = x / 3 + 1/2 for -3 < x < 3, 1 from 3 on, 0 up to -3
@elementwise(node="HardswishBackward0", variants=_F, check=_float_only("hardswish_cpu"),
             grad=lambda grad, self: ew.where(
                 ew.le(self, -3.0), 0.0, ew.where(
                     ew.lt(self, 3.0), ew.mul(grad, ew.add(ew.div(self, 3.0), 0.5)), grad)))
def hardswish(x, p, q):
    """x min(max(x + 3, 0), 6) / 6."""
    y = x + like(x, 3)
    if y < 0:
        y = like(x, 0)
    elif y > 6:
        y = like(x, 6)
    return x * y / like(x, 6)


# d/dx -log(1 + e^-x) = sigmoid(-x)
@elementwise(node="LogSigmoidBackward0", variants=_F, check=_float_only("log_sigmoid_cpu"),
             grad=lambda grad, self: ew.mul(grad, un.sigmoid(ew.neg(self))))
def logsigmoid(x, p, q):
    """log(sigmoid(x)) = min(x, 0) - log1p(e^-|x|)."""
    if x < 0:
        return x - math.log1p(math.exp(x))
    return -math.log1p(math.exp(-x))


def _silu_grad(grad, self):
    # d/dx x sigmoid(x) = sigmoid(x) (1 + x (1 - sigmoid(x)))
    s = un.sigmoid(self)
    return ew.mul(ew.mul(grad, s), ew.add(ew.mul(self, ew.rsub(s, 1)), 1))


@elementwise(node="SiluBackward0", variants=_F, check=_float_only("silu_cpu"), grad=_silu_grad)
def silu(x, p, q):
    """x / (1 + e^-x) (PyTorch's formula: -0.0 far below 0)."""
    return x / (like(x, 1) + math.exp(-x))


def _mish_grad(grad, self):
    # d/dx x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp = softplus
    t = un.tanh(un.softplus(self))
    return ew.mul(grad, ew.add(t, un.tanh_backward(ew.mul(self, un.sigmoid(self)), t)))


@elementwise(node="MishBackward0", variants=_F, check=_float_only("mish_cpu"), grad=_mish_grad)
def mish(x, p, q):
    """x tanh(log(1 + e^x))."""
    if x > 20:
        return x * math.tanh(x)
    return x * math.tanh(math.log1p(math.exp(x)))


# d/dx threshold = [x > threshold]
@elementwise(node="ThresholdBackward0", variants=_F, params={"threshold": 0.0, "value": 0.0},
             check=_no_bool(NotImplementedError(
                 "\"threshold_cpu\" not implemented for 'Bool'")),
             grad=lambda grad, self, threshold: ew.where(ew.le(self, threshold), 0.0, grad))
def threshold(x, p, q):
    """value where x <= threshold (p), else x (q = value; nan stays nan)."""
    if x <= p:
        return like(x, q)
    return x


# d/dx leaky_relu = 1 where x > 0, else negative_slope
@elementwise(node="LeakyReluBackward0", variants=_F, params={"negative_slope": 0.01},
             check=_float_only("leaky_relu_cpu"), grad=lambda grad, self, negative_slope:
             ew.where(ew.gt(self, 0), grad, ew.mul(grad, negative_slope)))
def leaky_relu(x, p, q):
    """x where x > 0, else negative_slope x (p)."""
    if x > 0:
        return x
    return x * like(x, p)


# ----------------------------------------------------------------------------------------
# glu, prelu, rrelu: ops over tensors of their own shapes (forwards made of existing ops)
# ----------------------------------------------------------------------------------------


def _glu_grad(grad, self, dim):
    # d/da a s(b) = s(b); d/db a s(b) = a s(b) (1 - s(b))
    a, b = sh.chunk(self, 2, dim)
    s = un.sigmoid(b)
    return sh.cat([ew.mul(grad, s), un.sigmoid_backward(ew.mul(grad, a), s)], dim)


@op(node="GluBackward0", grads={"self": _glu_grad}, variants=_F)
def glu(input, dim=-1):
    """a sigmoid(b) for the two halves a, b of ``input`` along ``dim``."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{x.shape[d]}")
    with no_grad():
        a, b = sh.chunk(_wrap(x), 2, d)
        return ew.mul(a, un.sigmoid(b))._data, {"dim": d}


def _prelu_weight_grad(grad, self, other):
    # d/dw (x > 0 ? x : w x) = x where x <= 0, summed over what w broadcasts over
    g = ew.where(ew.gt(self, 0), 0.0, ew.mul(grad, self))
    if other._data.ndim == 0:
        return red.sum(g)
    return red.sum_to_size(g, *other._data.shape)


@op(node="PreluKernelBackward0", inputs=("self", "other"), variants=_F, grads={
    # d/dx = 1 where x > 0, else w
    "self": lambda grad, self, other: ew.where(ew.gt(self, 0), grad, ew.mul(grad, other)),
    "other": _prelu_weight_grad})
def prelu(input, weight):
    """x where x > 0, else w x (``weight`` already shaped to broadcast over the channels)."""
    with no_grad():
        return ew.where(ew.gt(input, 0), input, ew.mul(input, weight))._data, {}


def _rrelu_grad(grad, self, noise, lower, upper, training):
    # training: d/dx (x noise) = noise; eval: leaky_relu's derivative, slope (lower + upper) / 2
    if training:
        return ew.mul(grad, noise)
    return ew.where(ew.gt(self, 0), grad, ew.mul(grad, (lower + upper) / 2))


@op(node="RreluWithNoiseBackward0", variants=_F, grads={"self": _rrelu_grad},
    save=("self", "noise", "lower", "upper", "training"))
def rrelu_with_noise(input, lower, upper, training, generator=None):
    """x where x > 0, else x r: in training r is drawn uniformly from [lower, upper) for each
    non-positive element in order (PyTorch's double draws), else r = (lower + upper) / 2."""
    return _rrelu_forward(input, lower, upper, training, generator)


def _rrelu_forward(input, lower, upper, training, generator):
    import numgrad
    x = input._data
    with no_grad():
        if not training:
            noise = numgrad.empty(0, dtype=input.dtype, device=input.device)
            r = leaky_relu(input, (lower + upper) / 2)._data
        else:
            at = np.flatnonzero(_arrays.host(ew.le(input, 0)._data))
            draws = numgrad.empty(at.size, dtype=numgrad.float64).uniform_(
                lower, upper, generator=generator)
            noise = numgrad.ones(x.shape, dtype=input.dtype, device=input.device)
            if at.size:
                sh.reshape(noise, (-1,))[numgrad.tensor(at, device=input.device)] = draws.to(
                    input.dtype, device=input.device)
            r = ew.mul(input, noise)._data
    return r, {"noise": noise, "lower": float(lower), "upper": float(upper),
               "training": bool(training)}


# ----------------------------------------------------------------------------------------
# in-place forms that PyTorch records as ``...Backward1``: the derivative read off the result
# (or the saved input), a negative slope refused when the backward runs. The forwards are the
# ops above (``numgrad.nn.functional`` applies them in place); no kernels of their own.
# ----------------------------------------------------------------------------------------

_NEG_ELU = ("In-place elu backward calculation is triggered with a negative slope which is not "
            "supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead.")
_NEG_LEAKY = ("In-place leakyReLu backward calculation is triggered with a negative slope which "
              "is not supported. This is caused by calling in-place forward function with a "
              "negative slope, please call out-of-place version instead. File an issue at "
              "https://github.com/pytorch/pytorch if you do require supporting in-place "
              "leakRelu backward calculation with negative slope")


def _elu_from_result(grad, result, alpha, scale, input_scale):
    # y = a s (e^(c x) - 1) for y <= 0: dy/dx = c (y + a s); s where y > 0
    if alpha * scale < 0:
        raise RuntimeError(_NEG_ELU)
    neg = ew.mul(ew.mul(grad, input_scale), ew.add(result, alpha * scale))
    return ew.where(ew.gt(result, 0), ew.mul(grad, scale), neg)


@op(name="elu_", node="EluBackward1", variants=_F, save=(
    "alpha", "input_scale", "result", "scale"), grads={
        "self": lambda grad, result, alpha, scale, input_scale: _elu_from_result(
            grad, result, alpha, scale, input_scale)})
def elu_result(input, alpha, scale):
    """elu (selu) whose node keeps the result (what ``elu_`` and ``selu_`` record)."""
    with no_grad():
        r = elu(input, alpha, scale)._data
    return r, {"alpha": float(alpha), "scale": float(scale), "input_scale": 1.0}


@op(name="celu_", node="CeluBackward1", variants=_F, save=("alpha", "result"), grads={
    "self": lambda grad, result, alpha: _elu_from_result(
        grad, result, alpha, 1.0, 1.0 / float(np.float32(alpha)))})
def celu_result(input, alpha):
    """celu whose node keeps the result (``celu_``)."""
    with no_grad():
        r = celu(input, alpha)._data
    return r, {"alpha": float(alpha)}


def _leaky_from_result(grad, result, negative_slope):
    # dy/dx = 1 where y > 0, else the slope
    if negative_slope < 0:
        raise RuntimeError(_NEG_LEAKY)
    return ew.where(ew.gt(result, 0), grad, ew.mul(grad, negative_slope))


@op(name="leaky_relu_", node="LeakyReluBackward1", variants=_F,
    save=("negative_slope", "result"), grads={"self": _leaky_from_result})
def leaky_relu_result(input, negative_slope):
    """leaky_relu whose node keeps the result (``leaky_relu_``)."""
    with no_grad():
        r = leaky_relu(input, negative_slope)._data
    return r, {"negative_slope": float(negative_slope)}


@op(name="threshold_", node="ThresholdBackward1", variants=_F, save=("self", "threshold"),
    grads={"self": lambda grad, self, threshold: ew.where(ew.le(self, threshold), 0.0, grad)})
def threshold_input(input, threshold_, value):
    """threshold as ``threshold_`` records it (the input before the write is saved)."""
    with no_grad():
        r = threshold(input, threshold_, value)._data
    return r, {"threshold": float(threshold_)}


def _rrelu_from_result(grad, result, noise, lower, upper, training):
    # training: d/dx (x noise) = noise; eval: 1 where y > 0, else (lower + upper) / 2
    if training:
        return ew.mul(grad, noise)
    return ew.where(ew.gt(result, 0), grad, ew.mul(grad, (lower + upper) / 2))


@op(name="rrelu_with_noise_", node="RreluWithNoiseBackward1", variants=_F,
    save=("lower", "noise", "result", "training", "upper"), grads={"self": _rrelu_from_result})
def rrelu_with_noise_result(input, lower, upper, training, generator=None):
    """rrelu whose node keeps the result (``rrelu_``)."""
    return _rrelu_forward(input, lower, upper, training, generator)


# ---- activations PyTorch writes as composites of ops (their nodes appear as they are) ----


def softsign(input):
    """x / (1 + |x|) (``DivBackward0``)."""
    return ew.div(input, ew.add(ew.abs(input), 1))


def tanhshrink(input):
    """x - tanh(x) (``SubBackward0``)."""
    return ew.sub(input, un.tanh(input))


def softmin(input, dim, dtype):
    """softmax(-x) along ``dim`` (``SoftmaxBackward0`` after ``NegBackward0``)."""
    return red.softmax(ew.neg(input), dim, dtype)
