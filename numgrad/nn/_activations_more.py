"""``numgrad.nn.functional`` activations: elu, celu, selu, glu, hardshrink, hardsigmoid,
hardswish, hardtanh, relu6, logsigmoid, mish, prelu, rrelu, softmin, softshrink, softsign,
tanhshrink, threshold and their in-place forms. PyTorch's argument checks and messages here;
the math is the declared ops of ``numgrad.ops.activation`` (or a composite of existing ops
where PyTorch records its pieces: softsign, tanhshrink, softmin)."""

from numgrad import _dtype
from numgrad.nn import _checks as C
from numgrad.ops import activation as act
from numgrad.ops import nn_layers as NL
from numgrad.ops.inplace import apply_

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _run(input, inplace, fn, fn_inplace=None):
    """``fn(input)``, or written into ``input`` (PyTorch's in-place rules) with ``inplace``
    (by ``fn_inplace`` where PyTorch's in-place form records another node)."""
    return apply_(input, fn_inplace or fn) if inplace else fn(input)


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (e^x - 1) (``EluBackward0``)."""
    C.numbers("elu", input, alpha=alpha)
    return _run(input, inplace, lambda x: act.elu(x, alpha, 1.0),
                lambda x: act.elu_result(x, alpha, 1.0))


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def selu(input, inplace=False):
    """scale elu(x, alpha) with the self-normalizing constants (``EluBackward0``)."""
    C.tensor_arg("selu", "input", 1, input)
    return _run(input, inplace, lambda x: act.elu(x, _SELU_ALPHA, _SELU_SCALE),
                lambda x: act.elu_result(x, _SELU_ALPHA, _SELU_SCALE))


def selu_(input):
    return selu(input, True)


def celu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (e^(x / alpha) - 1) (``CeluBackward0``)."""
    C.numbers("celu", input, alpha=alpha)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _run(input, inplace, lambda x: act.celu(x, alpha),
                lambda x: act.celu_result(x, alpha))


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val] (``HardtanhBackward0``)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    C.numbers("hardtanh", input, min_val=min_val, max_val=max_val)
    return _run(input, inplace, lambda x: act.hardtanh(x, min_val, max_val))


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    """min(max(x, 0), 6) (``HardtanhBackward0``, as PyTorch)."""
    C.tensor_arg("relu6", "input", 1, input)
    return _run(input, inplace, lambda x: act.hardtanh(x, 0.0, 6.0))


def relu_(input):
    """relu in place."""
    C.tensor_arg("relu_", "input", 1, input)
    return input.relu_()


def leaky_relu_(input, negative_slope=0.01):
    from numgrad.nn.functional import leaky_relu
    return leaky_relu(input, negative_slope, True)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6 (``HardsigmoidBackward0``)."""
    C.tensor_arg("hardsigmoid", "input", 1, input)
    return _run(input, inplace, act.hardsigmoid)


def hardswish(input, inplace=False):
    """x relu6(x + 3) / 6 (``HardswishBackward0``)."""
    C.tensor_arg("hardswish", "input", 1, input)
    return _run(input, inplace, act.hardswish)


def mish(input, inplace=False):
    """x tanh(softplus(x)) (``MishBackward0``)."""
    C.tensor_arg("mish", "input", 1, input)
    return _run(input, inplace, act.mish)


def logsigmoid(input):
    """log(sigmoid(x)) (``LogSigmoidBackward0``)."""
    C.tensor_arg("log_sigmoid", "input", 1, input)
    return act.logsigmoid(input)


def _shrink_lambd(fn, input, lambd, check_range):
    C.numbers(fn, input, lambd=lambd)
    dt = input.dtype
    if check_range and dt.is_floating_point and not lambd >= 0:
        top = "3.40282e+38" if dt == _dtype.float32 else "1.79769e+308"
        if dt in (_dtype.float16, _dtype.bfloat16):
            top = "65504" if dt == _dtype.float16 else "3.38953e+38"
        raise RuntimeError(f"lambda must be in range [0, {top}] for input dtype "
                           f"{dt._legacy}, but found {lambd:g}")


def hardshrink(input, lambd=0.5):
    """0 on [-lambd, lambd], else x (``HardshrinkBackward0``)."""
    _shrink_lambd("hardshrink", input, lambd, False)
    return act.hardshrink(input, lambd)


def softshrink(input, lambd=0.5):
    """x -+ lambd outside [-lambd, lambd], else 0 (``SoftshrinkBackward0``)."""
    _shrink_lambd("softshrink", input, lambd, True)
    return act.softshrink(input, lambd)


def softsign(input):
    """x / (1 + |x|): PyTorch's composite (``DivBackward0``)."""
    return act.softsign(input)


def tanhshrink(input):
    """x - tanh(x): PyTorch's composite (``SubBackward0``)."""
    return act.tanhshrink(input)


def threshold(input, threshold, value, inplace=False):
    """value where x <= threshold, else x (``ThresholdBackward0``)."""
    C.numbers("threshold", input, threshold=threshold, value=value)
    return _run(input, inplace, lambda x: act.threshold(x, threshold, value),
                lambda x: act.threshold_input(x, threshold, value))


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, True)


def glu(input, dim=-1):
    """a sigmoid(b) over the halves of ``dim`` (``GluBackward0``)."""
    C.tensor_arg("glu", "input", 1, input)
    if input.dim():
        C.require_float(input, "glu_cpu")
    return act.glu(input, dim)


def prelu(input, weight):
    """x where x > 0, else w x with a weight per channel (``PreluKernelBackward0``)."""
    C.tensors("prelu", "input weight", input, weight)
    if weight.dim() > 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    if input.dtype != weight.dtype:
        raise RuntimeError("prelu: Type promoting not supported. Got "
                           f"{input.dtype._legacy} and {weight.dtype._legacy}")
    n = weight.numel()
    if input.dim() == 0 and n != 1:
        raise RuntimeError("Not allow zero-dim input tensor.")
    channels = input.shape[1] if input.dim() > 1 else 1
    if n != 1 and n != channels:
        raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {n} and channel size = {channels}.")
    return NL.prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """x where x > 0, else r x: r uniform on [lower, upper) in training (PyTorch's draws),
    (lower + upper) / 2 in eval (``RreluWithNoiseBackward0``)."""
    C.numbers("rrelu", input, lower=lower, upper=upper)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    C.require_float(input, "leaky_relu_cpu")
    return _run(input, inplace, lambda x: act.rrelu_with_noise(x, lower, upper, training),
                lambda x: act.rrelu_with_noise_result(x, lower, upper, training))


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) (``SoftmaxBackward0`` after ``NegBackward0``, as PyTorch)."""
    from numgrad.nn.functional import _softmax_dim
    C.tensor_arg("softmin", "input", 1, input)
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return act.softmin(input, dim, dtype)
