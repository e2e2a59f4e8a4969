"""``numgrad.finfo`` and ``numgrad.iinfo``: the numeric limits of a dtype, as PyTorch shows
them (plain Python numbers, computed once from NumPy's tables; no kernel)."""

import numpy as np

from numgrad import _dtype

# bfloat16 has float32's exponent and an 8-bit significand (7 stored bits)
_BF16 = dict(bits=16, eps=2.0 ** -7, max=(2 - 2.0 ** -7) * 2.0 ** 127, tiny=2.0 ** -126,
             resolution=10.0 ** -2)


def _float_limits(d):
    if d is _dtype.bfloat16:
        return _BF16
    info = np.finfo(d.np)
    return dict(bits=info.bits, eps=float(info.eps), max=float(info.max),
                tiny=float(info.smallest_normal), resolution=10.0 ** -info.precision)


class finfo:  # noqa: N801  (PyTorch's name)
    """Limits of a floating point dtype (the default dtype when none is given)."""

    def __init__(self, type=None):  # noqa: A002  (PyTorch's keyword)
        if type is None:
            type = _dtype.get_default_dtype()  # noqa: A001
        if not isinstance(type, _dtype.dtype) or not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. "
                            "Use torch.iinfo to handle 'torch.finfo'")
        lim = _float_limits(type)
        self.dtype = type.name
        self.bits = lim["bits"]
        self.eps = lim["eps"]
        self.max = lim["max"]
        self.min = -lim["max"]
        self.tiny = self.smallest_normal = lim["tiny"]
        self.resolution = lim["resolution"]

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801  (PyTorch's name)
    """Limits of an integer dtype."""

    def __init__(self, type):  # noqa: A002  (PyTorch's keyword)
        if type is _dtype.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, _dtype.dtype) or type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. "
                            "Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = info.bits
        self.min = int(info.min)
        self.max = int(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
