"""Activation modules of ``torch.nn`` over ``numgrad.nn.functional``: PyTorch's constructor
signatures, ``inplace=`` where PyTorch has it, and its ``extra_repr`` (so ``print(model)``
reads the same)."""

import warnings

from numgrad.nn import _activations_more as A
from numgrad.nn.modules.module import Module
from numgrad.nn.parameter import Parameter


def _inplace_str(inplace):
    return ", inplace=True" if inplace else ""


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return A.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + _inplace_str(self.inplace)


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return A.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + _inplace_str(self.inplace)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        for old, new in (("min_value", "min_val"), ("max_value", "max_val")):
            given = locals()[old]
            if given is not None:
                warnings.warn(f"keyword argument `{old}` is deprecated and renamed to "
                              f"`{new}`", FutureWarning, stacklevel=2)
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input):
        return A.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_str(self.inplace)


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _Plain(Module):
    """An activation with only ``inplace`` (not shown in the repr, as PyTorch)."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, self.inplace)


class Hardsigmoid(_Plain):
    _fn = staticmethod(A.hardsigmoid)


class Hardswish(_Plain):
    _fn = staticmethod(A.hardswish)


class Mish(_Plain):
    _fn = staticmethod(A.mish)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class SELU(_Plain):
    _fn = staticmethod(A.selu)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return A.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + _inplace_str(self.inplace)


class CELU(ELU):
    def forward(self, input):
        return A.celu(input, self.alpha, self.inplace)


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(_Shrink):
    _fn = staticmethod(A.hardshrink)


class Softshrink(_Shrink):
    _fn = staticmethod(A.softshrink)


class _NoArgs(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class LogSigmoid(_NoArgs):
    _fn = staticmethod(A.logsigmoid)


class Softsign(_NoArgs):
    _fn = staticmethod(A.softsign)


class Tanhshrink(_NoArgs):
    _fn = staticmethod(A.tanhshrink)


class PReLU(Module):
    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        import numgrad
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(numgrad.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        from numgrad.nn import init
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return A.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softmin(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    def forward(self, input):
        from numgrad.nn.functional import softmax
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return softmax(input, -3, _stacklevel=5)
