"""DLPack: ``Tensor.__dlpack__``/``__dlpack_device__`` and ``numgrad.from_dlpack``.

A CPU tensor's data is a NumPy array, so NumPy makes the capsules (``ndarray.__dlpack__``)
and reads them (``np.from_dlpack``): nothing is copied either way. NumPy has no bfloat16,
so a bfloat16 tensor is exported as its 16-bit patterns with the capsule's dtype code set
to bfloat16, and a bfloat16 capsule is read the other way round. CUDA tensors are shared
through ``__cuda_array_interface__`` (numba's device arrays have no DLPack)."""

import ctypes
import enum

import numpy as np

from numgrad import _dtype


class DLDeviceType(enum.IntEnum):
    """The device codes of the DLPack specification (PyTorch's enum of the same name)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


_UINT, _BFLOAT = 1, 4  # DLDataType codes
_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
# Byte offsets in the capsule's struct: DLManagedTensor starts with its DLTensor, whose
# dtype follows data (8), device (8) and ndim (4); DLManagedTensorVersioned starts with
# version (8), manager_ctx (8), deleter (8) and flags (8), then its DLTensor.
_DTENSOR = {_LEGACY: 0, _VERSIONED: 32}
_CODE = 20
_DEVICE = 8
_FLAGS = 24
_READ_ONLY = 1


def _capsule_api():
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_IsValid.restype = ctypes.c_int
    api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return api


def _is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def _struct(capsule):
    """(address of its DLTensor, address of the whole struct, its name) of an unused
    DLPack capsule, else None."""
    api = _capsule_api()
    for name in (_LEGACY, _VERSIONED):
        if api.PyCapsule_IsValid(capsule, name):
            base = api.PyCapsule_GetPointer(capsule, name)
            return base + _DTENSOR[name], base, name
    return None


def _set_code(capsule, old, new):
    """Rewrite the capsule's dtype code ``old`` (16 bits) as ``new``; whether it did."""
    where = _struct(capsule)
    if where is None:
        return False
    code = ctypes.c_uint8.from_address(where[0] + _CODE)
    bits = ctypes.c_uint8.from_address(where[0] + _CODE + 1)
    if code.value != old or bits.value != 16:
        return False
    code.value = new
    return True


# --------------------------------------------------------------------------- export


def dlpack_device(t):
    a = t._data
    if a.__class__ is np.ndarray:
        return (DLDeviceType.kDLCPU, 0)
    return (DLDeviceType.kDLCUDA, t.device.index or 0)


def dlpack(t, stream=-1, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__``: PyTorch's checks, NumPy's capsule."""
    if t._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    a = t._data
    if a.__class__ is not np.ndarray:
        raise BufferError("numgrad exports CUDA tensors through __cuda_array_interface__, "
                          "not DLPack")
    if stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    kwargs = {"dl_device": dl_device, "copy": copy}
    if max_version is not None and max_version[0] >= 1:
        kwargs["max_version"] = max_version
    if t.dtype is _dtype.bfloat16:
        capsule = a.view(np.uint16).__dlpack__(**kwargs)
        _set_code(capsule, _UINT, _BFLOAT)
        return capsule
    return a.__dlpack__(**kwargs)


# --------------------------------------------------------------------------- import


class _Capsule:
    """A capsule NumPy can read: ``np.from_dlpack`` wants an object with ``__dlpack__``."""

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def _capsule_device(capsule):
    where = _struct(capsule)
    if where is None:
        raise RuntimeError(
            "from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
            "consumed only once, so you might have already constructed a tensor from it once.")
    kind = ctypes.c_int32.from_address(where[0] + _DEVICE).value
    index = ctypes.c_int32.from_address(where[0] + _DEVICE + 4).value
    return kind, index


def _export(obj):
    """A capsule of ``obj`` (versioned where the producer can)."""
    try:
        return obj.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer older than DLPack 1.0's keywords
        return obj.__dlpack__()


def _writable(a):
    """A writable array on the memory of ``a`` (which it keeps alive)."""
    if a.size == 0 or any(st < 0 for st in a.strides):
        return a
    span = a.itemsize + sum((n - 1) * st for n, st in zip(a.shape, a.strides))
    buf = (ctypes.c_char * span).from_address(a.__array_interface__["data"][0])
    buf.keep = a
    return np.ndarray(a.shape, a.dtype, buffer=buf, strides=a.strides)


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with ``ext_tensor`` (an object with ``__dlpack__``, or a
    capsule): NumPy arrays, PyTorch tensors, JAX/CuPy arrays on the CPU. ``copy=True`` copies;
    ``device`` moves the result (a copy when it is another device)."""
    from numgrad import _device
    if device is not None:
        if isinstance(device, str):
            device = _device.device(device)
        if not isinstance(device, _device.device):
            raise AssertionError(f"from_dlpack: unsupported device type: {type(device)}")
    t = _from_dlpack(ext_tensor)
    if device is not None and t.device != device:
        if copy is False:
            raise ValueError(f"cannot move DLPack tensor from device {t.__dlpack_device__()} "
                             f"to {device} without copying. Set copy=None or copy=True.")
        return t.to(device)
    return t.clone() if copy else t


def _from_dlpack(ext_tensor):
    from numgrad import _factories
    from numgrad.tensor import _wrap

    if not _is_capsule(ext_tensor) and hasattr(ext_tensor, "__dlpack_device__"):
        device = ext_tensor.__dlpack_device__()
        if int(device[0]) != DLDeviceType.kDLCPU and hasattr(
                ext_tensor, "__cuda_array_interface__"):
            return _factories.as_tensor(ext_tensor)  # zero copy on the GPU
    if _is_capsule(ext_tensor):
        capsule = ext_tensor
    elif hasattr(ext_tensor, "__dlpack__"):
        capsule = _export(ext_tensor)
    else:
        raise RuntimeError(
            "from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
            "consumed only once, so you might have already constructed a tensor from it once.")
    kind, index = _capsule_device(capsule)
    if kind != DLDeviceType.kDLCPU:
        name = DLDeviceType(kind).name if kind in set(DLDeviceType) else kind
        raise BufferError(f"numgrad.from_dlpack reads CPU memory; this capsule is on {name} "
                          "(share CUDA arrays through __cuda_array_interface__)")
    bf16 = _set_code(capsule, _BFLOAT, _UINT)
    where = _struct(capsule)
    read_only = where[2] == _VERSIONED and (
        ctypes.c_uint64.from_address(where[1] + _FLAGS).value & _READ_ONLY)
    a = np.from_dlpack(_Capsule(capsule, (kind, index)))
    if bf16:
        a = a.view(_dtype.BFLOAT16_NP)
    if where[2] == _LEGACY and not a.flags.writeable:
        a = _writable(a)  # NumPy marks every unversioned capsule read-only; PyTorch does not
    if read_only or not a.flags.writeable:
        # numgrad's kernels write through any tensor: read-only memory is copied
        a = a.copy()
    if a.dtype.kind == "V":
        return _wrap(a)
    return _factories.from_numpy(a)
