"""``torch.nn.modules.activation``'s import path: numgrad's classes of its names."""

from numgrad.nn.modules._alias import exports

_NAMES = (
    "Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU",
    "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU",
    "LogSigmoid", "Softplus", "Softshrink", "MultiheadAttention", "PReLU", "Softsign",
    "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax",
)
__getattr__, __dir__ = exports(__name__, _NAMES)
