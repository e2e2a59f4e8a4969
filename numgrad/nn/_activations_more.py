"""``numgrad.nn.functional`` activations: elu, celu, selu, glu, hardshrink, hardsigmoid,
hardswish, hardtanh, relu6, logsigmoid, mish, prelu, rrelu, softmin, softshrink, softsign,
tanhshrink, threshold and their in-place forms, with PyTorch's argument parsing; the checks
are ``numgrad.ops.nn_activation``'s, the math the declared ops of ``numgrad.ops.activation``
(or a composite of existing ops where PyTorch records its pieces: softsign, tanhshrink)."""

from numgrad.nn import _checks as C
from numgrad.ops import activation as act
from numgrad.ops import nn_activation as NA
from numgrad.ops import nn_layers as NL


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (e^x - 1) (``EluBackward0``)."""
    C.numbers("elu", input, alpha=alpha)
    return NA.elu(input, alpha, 1.0, inplace)


def elu_(input, alpha=1.0):
    C.numbers("elu_", input, alpha=alpha)
    return NA.elu(input, alpha, 1.0, True)


def selu(input, inplace=False):
    """scale elu(x, alpha) with the self-normalizing constants (``EluBackward0``)."""
    C.tensor_arg("selu", "input", 1, input)
    return NA.elu(input, NA.SELU_ALPHA, NA.SELU_SCALE, inplace)


def selu_(input):
    C.tensor_arg("selu_", "input", 1, input)
    return NA.elu(input, NA.SELU_ALPHA, NA.SELU_SCALE, True)


def celu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (e^(x / alpha) - 1) (``CeluBackward0``)."""
    C.numbers("celu", input, alpha=alpha)
    return NA.celu(input, alpha, inplace)


def celu_(input, alpha=1.0):
    C.numbers("celu_", input, alpha=alpha)
    return NA.celu(input, alpha, True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val] (``HardtanhBackward0``)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    C.numbers("hardtanh", input, min_val=min_val, max_val=max_val)
    return NA.hardtanh(input, min_val, max_val, inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """hardtanh in place: PyTorch's C binding, which takes min_val > max_val (max_val wins)."""
    C.numbers("hardtanh_", input, min_val=min_val, max_val=max_val)
    return NA.hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    """min(max(x, 0), 6) (``HardtanhBackward0``, as PyTorch)."""
    C.tensor_arg("relu6", "input", 1, input)
    return NA.hardtanh(input, 0.0, 6.0, inplace)


def relu_(input):
    """relu in place."""
    C.tensor_arg("relu_", "input", 1, input)
    return input.relu_()


def leaky_relu_(input, negative_slope=0.01):
    C.numbers("leaky_relu_", input, negative_slope=negative_slope)
    return NA.leaky_relu(input, negative_slope, True)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6 (``HardsigmoidBackward0``)."""
    C.tensor_arg("hardsigmoid", "input", 1, input)
    return NA.unary(act.hardsigmoid, input, inplace)


def hardswish(input, inplace=False):
    """x relu6(x + 3) / 6 (``HardswishBackward0``)."""
    C.tensor_arg("hardswish", "input", 1, input)
    return NA.unary(act.hardswish, input, inplace)


def mish(input, inplace=False):
    """x tanh(softplus(x)) (``MishBackward0``)."""
    C.tensor_arg("mish", "input", 1, input)
    return NA.unary(act.mish, input, inplace)


def logsigmoid(input):
    """log(sigmoid(x)) (``LogSigmoidBackward0``)."""
    C.tensor_arg("log_sigmoid", "input", 1, input)
    return act.logsigmoid(input)


def hardshrink(input, lambd=0.5):
    """0 on [-lambd, lambd], else x (``HardshrinkBackward0``)."""
    C.numbers("hardshrink", input, lambd=lambd)
    return NA.shrink(input, lambd, False)


def softshrink(input, lambd=0.5):
    """x -+ lambd outside [-lambd, lambd], else 0 (``SoftshrinkBackward0``)."""
    C.numbers("softshrink", input, lambd=lambd)
    return NA.shrink(input, lambd, True)


def softsign(input):
    """x / (1 + |x|): PyTorch's composite (``DivBackward0``)."""
    C.attribute(input, "abs")
    return act.softsign(input)


def tanhshrink(input):
    """x - tanh(x): PyTorch's composite (``SubBackward0``)."""
    C.attribute(input, "tanh")
    return act.tanhshrink(input)


def threshold(input, threshold, value, inplace=False):
    """value where x <= threshold, else x (``ThresholdBackward0``)."""
    C.numbers("threshold", input, threshold=threshold, value=value)
    return NA.threshold(input, threshold, value, inplace)


def threshold_(input, threshold, value):
    C.numbers("threshold_", input, threshold=threshold, value=value)
    return NA.threshold(input, threshold, value, True)


def glu(input, dim=-1):
    """a sigmoid(b) over the halves of ``dim`` (``GluBackward0``)."""
    C.attribute(input, "dim")
    return NA.glu(input, C.int_arg(dim, "glu", "dim", 2))


def prelu(input, weight):
    """x where x > 0, else w x with a weight per channel (``PreluKernelBackward0``)."""
    C.tensors("prelu", "input weight", input, weight)
    return NL.prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """x where x > 0, else r x: r uniform on [lower, upper) in training (PyTorch's draws),
    (lower + upper) / 2 in eval (``RreluWithNoiseBackward0``)."""
    C.numbers("rrelu", input, lower=lower, upper=upper)
    return NA.rrelu(input, lower, upper, C.bool_arg(training, "rrelu", "training", 4), inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    C.numbers("rrelu_", input, lower=lower, upper=upper)
    return NA.rrelu(input, lower, upper, C.bool_arg(training, "rrelu_", "training", 4), True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) (``SoftmaxBackward0`` after ``NegBackward0``, as PyTorch)."""
    return act.softmin(*C.softmax_args("softmin", input, dim, dtype, _stacklevel))
