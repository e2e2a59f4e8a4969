"""``nn.Parameter``: a leaf tensor that modules register as a learnable weight."""

from numgrad.tensor import Tensor, _init_like_wrap, _wrap


class Parameter(Tensor):
    """A tensor that requires grad by default and prints as "Parameter containing:"."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            import numpy as np
            data = _wrap(np.empty((0,), np.float32))
        p = object.__new__(cls)
        _init_like_wrap(p, data._data)
        p._vc = data._shared_vc()  # a parameter made from a tensor shares its versions
        if requires_grad:
            if not (data.dtype.is_floating_point or data.dtype.is_complex):
                raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                                   "gradients")  # PyTorch's _make_subclass spelling
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach(), self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(_wrap(self._data.copy()), self._requires_grad)
        memo[id(self)] = result
        return result


class Buffer(Tensor):
    """Marker type accepted by ``Module.register_buffer`` (``nn.Buffer`` in PyTorch)."""

    __slots__ = ()

    def __new__(cls, data, persistent=True):
        return data.detach()


def __getattr__(name):
    # the lazy modules' placeholders (torch.nn.parameter's names) live with those modules
    if name in ("UninitializedParameter", "UninitializedBuffer"):
        from numgrad.nn.modules import conv_extra
        return getattr(conv_extra, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
