"""Padding layers: reflection, replication, circular, zero and constant, 1-D, 2-D and 3-D."""

from numgrad.nn import functional as F
from numgrad.nn.modules.module import Module


def _widths(padding, n):
    if isinstance(padding, (list, tuple)):
        return tuple(padding)
    return (padding,) * (2 * n)


class _Pad(Module):
    _mode = "constant"
    _n = 2

    def __init__(self, padding):
        super().__init__()
        self.padding = _widths(padding, self._n)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_Pad):
    _mode, _n = "reflect", 1


class ReflectionPad2d(_Pad):
    _mode, _n = "reflect", 2


class ReflectionPad3d(_Pad):
    _mode, _n = "reflect", 3


class ReplicationPad1d(_Pad):
    _mode, _n = "replicate", 1


class ReplicationPad2d(_Pad):
    _mode, _n = "replicate", 2


class ReplicationPad3d(_Pad):
    _mode, _n = "replicate", 3


class CircularPad1d(_Pad):
    _mode, _n = "circular", 1


class CircularPad2d(_Pad):
    _mode, _n = "circular", 2


class CircularPad3d(_Pad):
    _mode, _n = "circular", 3


class _ConstantPad(_Pad):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPad):
    _n = 1


class ConstantPad2d(_ConstantPad):
    _n = 2


class ConstantPad3d(_ConstantPad):
    _n = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"
