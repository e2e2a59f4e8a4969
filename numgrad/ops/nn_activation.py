"""The activations of ``numgrad.nn.functional`` below their argument parsing: PyTorch's
checks of their values and dtypes, then the declared ops of ``numgrad.ops.activation`` (the
in-place forms write into the input by PyTorch's in-place rules, recording the node
PyTorch's in-place kernel records)."""

from numgrad import _dtype
from numgrad.ops import activation as act
from numgrad.ops import gelu as gelu_op
from numgrad.ops import nn_checks as K
from numgrad.ops.inplace import apply_

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _run(input, inplace, fn, fn_inplace=None):
    """``fn(input)``, or written into ``input`` (PyTorch's in-place rules) with ``inplace``
    (by ``fn_inplace`` where PyTorch's in-place form records another node)."""
    return apply_(input, fn_inplace or fn) if inplace else fn(input)


def elu(input, alpha, scale, inplace):
    """scale (x where x > 0, else alpha (e^x - 1)) (``EluBackward0``)."""
    return _run(input, inplace, lambda x: act.elu(x, alpha, scale),
                lambda x: act.elu_result(x, alpha, scale))


def celu(input, alpha, inplace):
    """x where x > 0, else alpha (e^(x / alpha) - 1) (``CeluBackward0``)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _run(input, inplace, lambda x: act.celu(x, alpha),
                lambda x: act.celu_result(x, alpha))


def hardtanh(input, min_val, max_val, inplace):
    """x clamped to [min_val, max_val] (``HardtanhBackward0``)."""
    return _run(input, inplace, lambda x: act.hardtanh(x, min_val, max_val))


def unary(fn, input, inplace):
    """A parameterless activation ``fn`` of ``numgrad.ops.activation``, in place or not."""
    return _run(input, inplace, fn)


def shrink(input, lambd, soft):
    """softshrink (``soft``; lambd checked against the dtype's range) or hardshrink."""
    dt = input.dtype
    if soft and dt.is_floating_point and not lambd >= 0:
        top = "3.40282e+38" if dt == _dtype.float32 else "1.79769e+308"
        if dt in (_dtype.float16, _dtype.bfloat16):
            top = "65504" if dt == _dtype.float16 else "3.38953e+38"
        raise RuntimeError(f"lambda must be in range [0, {top}] for input dtype "
                           f"{dt._legacy}, but found {lambd:g}")
    return act.softshrink(input, lambd) if soft else act.hardshrink(input, lambd)


def threshold(input, threshold, value, inplace):
    """value where x <= threshold, else x (``ThresholdBackward0``)."""
    return _run(input, inplace, lambda x: act.threshold(x, threshold, value),
                lambda x: act.threshold_input(x, threshold, value))


def glu(input, dim):
    """a sigmoid(b) over the halves of ``dim`` (``GluBackward0``)."""
    if input.dim():
        K.require_float(input, "glu_cpu")
    return act.glu(input, dim)


def rrelu(input, lower, upper, training, inplace):
    """x where x > 0, else r x (``RreluWithNoiseBackward0``)."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    K.require_float(input, "leaky_relu_cpu")
    return _run(input, inplace, lambda x: act.rrelu_with_noise(x, lower, upper, training),
                lambda x: act.rrelu_with_noise_result(x, lower, upper, training))


def gelu(input, approximate):
    """x Phi(x) (``GeluBackward0``); ``approximate='tanh'``: the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    K.require_float(input, "GeluKernelImpl")
    return gelu_op.gelu(input, approximate)


def silu(input, inplace):
    """x sigmoid(x) (``SiluBackward0``)."""
    return _run(input, inplace, act.silu)


def leaky_relu(input, negative_slope, inplace):
    """x where x > 0, else negative_slope x (``LeakyReluBackward0``/``1``, as PyTorch)."""
    K.require_float(input, "leaky_relu_cpu")
    if inplace:
        return apply_(input, lambda x: act.leaky_relu_result(x, negative_slope))
    return act.leaky_relu(input, negative_slope)
