"""Device-aware array helpers for the op layer.

Tensor data is a NumPy array (CPU) or a ``CudaArray`` (GPU). Ops allocate results "like"
an input so they land on its device; the CPU path stays a plain ``np.empty`` behind one
class check.
"""

import numpy as np

from numgrad import _hook

ndarray = np.ndarray


def cuda_array():
    from numgrad.kernels.cuda.array import CudaArray
    return CudaArray


def new(shape, dtype):
    """``np.empty(shape, dtype)`` for a kernel to write (a compiled trace knows its content
    means nothing: ``_hook.uninit``)."""
    a = np.empty(shape, dtype)
    return a if _hook.TAPE is None else _hook.uninit(a)


def empty(like, shape, dtype):
    if like.__class__ is ndarray:
        a = np.empty(shape, dtype)
        return a if _hook.TAPE is None else _hook.uninit(a)
    return like.__class__.empty(shape, dtype)


# filled arrays are made from Python values: a compiled trace may keep them (``_hook.constant``;
# a replay restores the content of one that a kernel then writes)

def full(like, shape, value, dtype):
    if like.__class__ is ndarray:
        a = np.full(shape, value, dtype)
        return a if _hook.TAPE is None else _hook.constant(a)
    return like.__class__.full(shape, value, dtype)


def zeros(like, shape, dtype):
    if like.__class__ is ndarray:
        a = np.zeros(shape, dtype)
        return a if _hook.TAPE is None else _hook.constant(a)
    return like.__class__.full(shape, 0, dtype)


def ones(like, shape, dtype):
    if like.__class__ is ndarray:
        a = np.ones(shape, dtype)
        return a if _hook.TAPE is None else _hook.constant(a)
    return like.__class__.full(shape, 1, dtype)


def contiguous(a):
    if a.__class__ is ndarray:
        if _hook.TAPE is None:
            return np.ascontiguousarray(a)
        return _hook.record(np.ascontiguousarray, a)
    return a.contiguous()


def constant(a):
    """``a``, made from Python values and sizes only (numbers a compiled trace guards): a
    trace may keep it."""
    return a if _hook.TAPE is None else _hook.constant(a)


def sizes(values):
    """An int64 array of sizes (a shape, say): made from Python numbers, so a compiled trace
    may keep it."""
    return _hook.constant(np.asarray(values, np.int64))


# host_step(fn, *args): ``fn(*args)``, host work on arrays (NumPy on index values, say) that a
# compiled trace records and replays on the current arrays; ``fn`` must have no other effect
host_step = _hook.record


def _copy(a):
    return a.copy()


_copy.pure = True


def copy(a):
    """A C-contiguous copy of ``a`` (a step a compiled trace replays)."""
    if a.__class__ is ndarray:
        return host_step(_copy, a)
    return a.copy()


def reshape(a, shape):
    """``a.reshape(shape)``: a view where strides allow, else a copy (which a compiled trace
    records, so a replay copies the current values)."""
    r = a.reshape(shape)
    if _hook.TAPE is not None and a.__class__ is ndarray and a.size > 1 and \
            not np.shares_memory(r, a):
        return _hook.record(np.reshape, a, shape)
    return r


def _astype(a, dtype):
    return a.astype(dtype)


_astype.pure = True


def astype(a, dtype):
    """``a`` in ``dtype`` (``a`` itself when it is): a cast a compiled trace replays."""
    if a.dtype == dtype:
        return a
    if a.__class__ is ndarray:
        return host_step(_astype, a, dtype)
    return a.astype(dtype)


def host(a):
    """The values of ``a`` as a NumPy array (a device-to-host copy for CUDA data)."""
    return a if a.__class__ is ndarray else a.to_host()


def to_device(a, dev):
    """``a`` on device ``dev`` (``numgrad._device.CPU`` or ``CUDA0``); no copy when it is."""
    if dev.type == "cpu":
        return a if a.__class__ is ndarray else a.to_host()
    if a.__class__ is ndarray:
        return cuda_array().from_host(a)
    return a


def shares_memory(a, b):
    if a.__class__ is ndarray:
        return np.shares_memory(a, b)
    return a.buf is b.buf


def as_strided(a, shape, strides_bytes):
    """A view of ``a``'s memory from its first element with the given shape and strides."""
    if a.__class__ is ndarray:
        return np.lib.stride_tricks.as_strided(a, shape, strides_bytes)
    return a.as_strided(shape, strides_bytes)


def element_offset(view, base):
    """Offset in elements of ``view``'s first element from ``base``'s."""
    if view.__class__ is ndarray:
        return ((view.__array_interface__["data"][0] - base.__array_interface__["data"][0])
                // view.itemsize)
    return view.offset - base.offset


def is_foreign_cuda(obj):
    """Another library's GPU array (``__cuda_array_interface__``; the simulator's arrays)."""
    if isinstance(obj, ndarray):
        return False
    return hasattr(obj, "__cuda_array_interface__") or type(obj).__name__ == "FakeCUDAArray"


def zeros_on(device, shape, dtype):
    """Zeros on ``device`` (``numgrad._device.CPU`` or ``CUDA0``)."""
    if device.type == "cpu":
        a = np.zeros(shape, dtype)
        return a if _hook.TAPE is None else _hook.constant(a)
    return cuda_array().full(shape, 0, dtype)


def _item(a):
    return a.item()


def item(a):
    """The one value of ``a`` as a Python number. A compiled trace replays this read as a
    check: a replay whose value differs runs eagerly instead."""
    if a.__class__ is ndarray:
        return _hook.record(_item, a)
    return a.to_host().item()
