"""The legacy tensor types: ``numgrad.FloatTensor``, ``LongTensor``, ... and
``numgrad.cuda.FloatTensor``.

As in PyTorch they are not subclasses of ``Tensor`` but "tensor types": calling one builds a
tensor of its dtype on its device (``FloatTensor([1, 2])`` copies data, ``FloatTensor(2, 3)``
is uninitialized, ``FloatTensor(t)`` aliases a tensor of the same type), ``isinstance(t,
FloatTensor)`` asks whether ``t`` has that dtype and device, and ``x.type(LongTensor)`` casts.
"""

import numbers

import numpy as np

from numgrad import _device, _dtype
from numgrad._shape import Size

_SIGNATURES = (
    " * (*, torch.device device = None)\n"
    " * (torch.Storage storage)\n"
    " * (Tensor other)\n"
    " * (tuple of ints size, *, torch.device device = None)\n"
    " * (object data, *, torch.device device = None)\n")


class tensortype(type):  # noqa: N801  (PyTorch's name: type(torch.FloatTensor))
    """The metaclass of the legacy tensor types: each type is one (dtype, device) pair."""

    def __repr__(cls):
        where = "cuda." if cls.is_cuda else ""
        return f"<class 'torch.{where}{cls.dtype._legacy}Tensor'>"

    def __instancecheck__(cls, obj):
        from numgrad.tensor import Tensor
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and obj.is_cuda == cls.is_cuda)

    def __subclasscheck__(cls, sub):
        return sub is cls

    def __call__(cls, *args, **kwargs):
        return _construct(cls, args, kwargs)


def _invalid(args, kwargs):
    got = ", ".join([type(a).__name__ for a in args]
                    + [f"{k}=torch.dtype" if isinstance(v, _dtype.dtype)
                       else f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"new() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{_SIGNATURES}")


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _construct(cls, args, kwargs):
    from numgrad import _factories
    from numgrad.tensor import Tensor
    if set(kwargs) - {"device"}:
        raise _invalid(args, kwargs)
    device = kwargs.get("device")
    if device is not None:
        kind = device if isinstance(device, str) else getattr(device, "type", device)
        kind = str(kind).partition(":")[0]
        want = "cuda" if cls.is_cuda else "cpu"
        if kind != want:
            raise RuntimeError(f"legacy constructor expects device type: {want} but device "
                               f"type: {kind} was passed")
    where = _device.CUDA0 if cls.is_cuda else _device.CPU  # not the default device
    d = cls.dtype
    if not args:
        return _factories.empty(0, dtype=d, device=where)
    if len(args) == 1 and not _is_int(args[0]):
        data = args[0]
        if isinstance(data, Size):  # a Size is a size, any other tuple is data
            return _factories.empty(tuple(data), dtype=d, device=where)
        if isinstance(data, Tensor):
            if data.dtype is not d or data.is_cuda != cls.is_cuda:
                raise TypeError(_options_message(d, data))
            from numgrad.ops.shape import alias
            return alias(data)
        if isinstance(data, str):
            raise TypeError("new(): invalid data type 'str'")
        if isinstance(data, (numbers.Number, np.generic)):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        return _factories.tensor(data, dtype=d, device=where)
    if all(_is_int(a) for a in args):
        return _factories.empty(tuple(int(a) for a in args), dtype=d, device=where)
    for i, a in enumerate(args):
        if not _is_int(a) and not isinstance(a, (list, tuple)):
            raise TypeError(
                f"new(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                f"\"type must be tuple of ints,but got {type(a).__name__}\"")
    raise _invalid(args, kwargs)


def _options_message(d, data):
    def options(name, device):
        return (f"TensorOptions(dtype={name}, device={device}, layout=Strided, "
                "requires_grad=false (default), pinned_memory=false (default), "
                "memory_format=(nullopt))")
    want_dev = "cuda:0" if data.is_cuda else "cpu"
    return (f"expected {options(_dtype.cpp_name(d.np), want_dev)} (got "
            f"{options(_dtype.cpp_name(data._data.dtype), str(data.device))})")


def _make(d, cuda):
    name = f"{d._legacy}Tensor"
    cls = tensortype.__new__(tensortype, name, (), {
        "dtype": d, "is_cuda": cuda, "is_sparse": False, "__slots__": (),
        "__module__": "numgrad.cuda" if cuda else "numgrad", "__qualname__": name,
        "__doc__": f"Legacy constructor of {'CUDA ' if cuda else ''}{d!r} tensors."})
    return cls


def types(cuda=False):
    """``{"FloatTensor": <type>, ...}`` for every numgrad dtype on the CPU or on CUDA."""
    return {f"{d._legacy}Tensor": _make(d, cuda) for d in _dtype.ALL}


CPU_TYPES = types(cuda=False)
CUDA_TYPES = types(cuda=True)
