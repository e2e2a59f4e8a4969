"""``Tensor.new`` (PyTorch's legacy constructor: the tensor's dtype and device) and
``Tensor.resize_`` (a new contiguous shape over the same storage, grown when it must be)."""

import numpy as np

from numgrad import _arrays
from numgrad.kernels import EW

_SIGNATURES = (" * (*, torch.device device = None)\n"
               " * (torch.Storage storage)\n"
               " * (Tensor other)\n"
               " * (tuple of ints size, *, torch.device device = None)\n"
               " * (object data, *, torch.device device = None)\n")


def _options(dt, device):
    return (f"TensorOptions(dtype={_cpp(dt)}, "
            f"device={device}, layout=Strided, requires_grad=false (default), "
            "pinned_memory=false (default), memory_format=(nullopt))")


def _cpp(dt):
    from numgrad import _dtype
    return _dtype.cpp_name(np.dtype(dt.np))


def _name(v):
    n = type(v).__name__
    return "torch." + n if n in ("dtype", "device", "Size") else n


def _invalid(args, kwargs):
    got = [_name(a) for a in args] + [f"{k}={_name(v)}" for k, v in kwargs.items()]
    return TypeError(f"new() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n" + _SIGNATURES)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def new(t, *args, **kwargs):
    """``t.new()``, ``t.new(*sizes)``, ``t.new(size)``, ``t.new(data)``, ``t.new(other)``:
    uninitialised (sizes) or copied (data) in ``t``'s dtype and on its device."""
    from numgrad import _factories
    from numgrad._device import device as _device_type
    from numgrad.tensor import Tensor
    device = kwargs.pop("device", None)
    if kwargs:
        raise _invalid(args, {**kwargs} if device is None else {"device": device, **kwargs})
    if device is not None:
        dev = _device_type(device) if not isinstance(device, _device_type) else device
        if dev.type != t.device.type:
            raise RuntimeError(f"legacy constructor expects device type: {t.device.type} but "
                               f"device type: {dev.type} was passed")
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not t.dtype or other.device.type != t.device.type:
            raise TypeError(f"expected {_options(t.dtype, t.device.type)} (got "
                            f"{_options(other.dtype, other.device.type)})")
        return other.detach()
    if len(args) == 1 and not _is_int(args[0]):
        data = args[0]
        if type(data).__name__ == "Size":
            return _factories.empty(tuple(data), dtype=t.dtype, device=t.device)
        if isinstance(data, (bool, float, int, complex, np.generic)):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        if not isinstance(data, (list, tuple, np.ndarray)):
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
        return _factories.tensor(data, dtype=t.dtype, device=t.device)
    if args and _is_int(args[0]):
        for k, a in enumerate(args):
            if not _is_int(a):
                if isinstance(a, str) or k:
                    raise TypeError(f"new(): argument 'size' failed to unpack the object at pos "
                                    f"{k + 1} with error \"type must be tuple of ints,but got "
                                    f"{type(a).__name__}\"")
        return _factories.empty(tuple(int(a) for a in args), dtype=t.dtype, device=t.device)
    if args:
        raise _invalid(args, {})
    return _factories.empty(0, dtype=t.dtype, device=t.device)


def resize_(t, *sizes, memory_format=None):
    """``t`` reshaped in place to ``sizes``, contiguous over the storage it starts at; the
    storage grows (old elements kept, new ones zero) when ``sizes`` needs more elements."""
    from numgrad import _memory_format
    from numgrad._shape import parse_shape
    if t._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = tuple(parse_shape(sizes))
    if any(s < 0 for s in shape):
        raise RuntimeError("numel: integer multiplication overflow" if len(shape) == 1 else
                           f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    if memory_format not in (None, _memory_format.contiguous_format,
                             _memory_format.preserve_format):
        rank = 5 if memory_format is _memory_format.channels_last_3d else 4
        if len(shape) != rank:
            raise RuntimeError(f"required rank {rank} tensor to use "
                               f"{'channels_last_3d' if rank == 5 else 'channels_last'} format")
        raise NotImplementedError("resize_: channels_last layouts are not supported by numgrad")
    a = t._data
    if shape == a.shape:  # same shape: PyTorch keeps the strides
        return t
    n = int(np.prod(shape, dtype=np.int64))
    flat, room = _storage(t)
    if flat is not None and n <= room:
        t._data = flat[:n].reshape(shape)
    else:  # a new, larger storage holding the old elements first (the tensor's own from now)
        grown = _arrays.zeros(a, (n,), a.dtype)
        keep = min(n, room if flat is not None else a.size)
        if keep:
            src = flat[:keep] if flat is not None else _arrays.contiguous(a).reshape(-1)[:keep]
            EW.unary(EW.copy, src, a.dtype, out=grown[:keep])
        t._data = grown.reshape(shape)
        t._base = None
    t._bump_version()
    return t


def _storage(t):
    """The flat storage from ``t``'s first element to the end of the buffer it lies in, and
    its length (None when the buffer is not one contiguous block numgrad can see)."""
    a = t._data
    if a.__class__ is not np.ndarray:  # CUDA data: its own contiguous copy
        return _arrays.contiguous(a).reshape(-1), a.size
    owner = t._base._data if t._base is not None else a
    if not owner.flags.c_contiguous:
        return (a.reshape(-1), a.size) if a.flags.c_contiguous else (None, 0)
    whole = owner.reshape(-1)
    off = _arrays.element_offset(a, owner) if t._base is not None else 0
    if off < 0 or off > whole.size:
        return None, 0
    return whole[off:], whole.size - off
