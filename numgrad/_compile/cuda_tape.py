"""Recording what numgrad does on the GPU during a trace (the CUDA half of ``tape.py``).

All of numgrad's device work goes through a few functions: kernels are launched by
``_launch.launch`` / ``_launch.launch_blocks``, device memory is made by ``_launch.alloc`` and
``CudaArray.from_host``, and device values reach Python through ``CudaArray.to_host``. While
a tape is active (``install`` .. ``uninstall``, called by ``tape.start`` / ``tape.stop``) these
are wrapped so that each call made by the tracing thread is appended to the tape's ``calls``
as one of the events below, in the order it ran. A call made inside another recorded call
(the copy ``to_host`` makes of a strided view) is part of it and not recorded on its own.

Handing a CUDA tensor's memory to another library (``device_array()``,
``__cuda_array_interface__``: CuPy, cuBLAS) cannot be replayed: it marks the trace unusable.
"""

import sys
import threading

import numpy as np


class CudaEvent:
    """One recorded piece of device work."""

    __slots__ = ()


class Launch(CudaEvent):
    """``kernel[blocks, threads](*args)``: ``args`` as given (device buffers, offsets, shapes,
    scalars)."""

    __slots__ = ("kernel", "config", "args")

    def __init__(self, kernel, config, args):
        self.kernel, self.config, self.args = kernel, config, args


class Alloc(CudaEvent):
    """A new (uninitialised) flat device buffer ``buf``."""

    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf


class Upload(CudaEvent):
    """A new flat device buffer ``buf`` holding a copy of host array ``source``; ``content``
    is what the buffer held right after the copy."""

    __slots__ = ("source", "buf", "content")

    def __init__(self, source, buf, content):
        self.source, self.buf, self.content = source, buf, content


class Read(CudaEvent):
    """Python read the view (``offset``, ``shape``, element ``strides``) of device buffer
    ``buf`` and got ``value`` (a host array)."""

    __slots__ = ("buf", "offset", "shape", "strides", "value")

    def __init__(self, view, value):
        self.buf, self.offset, self.shape = view.buf, view.offset, view.shape
        self.strides, self.value = view.strides_el, value


_ACTIVE = None  # the tape the wrappers record on
_ORIG = {}  # what the wrappers replaced, put back by ``uninstall``
_DEPTH = [0]


def _tape():
    """The tape to record on, when this call is the tracing thread's outermost device call."""
    tape = _ACTIVE
    if tape is None or tape._depth or _DEPTH[0] or threading.get_ident() != tape.thread:
        return None
    return tape


def _inner(fn, *args):
    _DEPTH[0] += 1
    try:
        return fn(*args)
    finally:
        _DEPTH[0] -= 1


def _launch(k, n, *args):
    tape = _tape()
    if tape is not None and n > 0:
        tape.calls.append(Launch(k, _ORIG["grid"](n), args))
    return _inner(_ORIG["launch"], k, n, *args)


def _launch_blocks(k, blocks, threads, *args):
    tape = _tape()
    if tape is not None and blocks > 0:
        tape.calls.append(Launch(k, (blocks, threads), args))
    return _inner(_ORIG["launch_blocks"], k, blocks, threads, *args)


def _alloc(n, dtype):
    tape = _tape()
    buf = _inner(_ORIG["alloc"], n, dtype)
    if tape is not None:
        tape.calls.append(Alloc(buf))
    return buf


def _from_host(cls, arr):
    tape = _tape()
    out = _inner(_ORIG["from_host"].__func__, cls, arr)
    if tape is not None:
        tape.calls.append(Upload(np.asarray(arr), out.buf, out.buf.copy_to_host()))
    return out


def _to_host(self):
    tape = _tape()
    value = _inner(_ORIG["to_host"], self)
    if tape is not None:
        tape.calls.append(Read(self, value.copy()))
        tape.produced.add(id(value))  # host values a replay checks (a guard): not "outside"
        tape._keep.append(value)
    return value


def _shared():
    tape = _ACTIVE
    if tape is not None:
        tape.unreplayable("another library used a CUDA tensor's memory")


def _device_array(self):
    _shared()
    return _ORIG["device_array"](self)


def _interface(self):
    _shared()
    return _ORIG["interface"].fget(self)


def install(tape):
    """Record ``tape``'s device work, when the CUDA backend is loaded; returns whether it is.
    A backend loaded only during the trace is work the tape did not see (``uninstall``)."""
    global _ACTIVE
    launch = sys.modules.get("numgrad.kernels.cuda._launch")
    if launch is None:
        return False
    from numgrad.kernels.cuda.array import CudaArray
    _ORIG.update(launch=launch.launch, launch_blocks=launch.launch_blocks, alloc=launch.alloc,
                 grid=launch.grid, from_host=CudaArray.__dict__["from_host"],
                 to_host=CudaArray.to_host, device_array=CudaArray.device_array,
                 interface=CudaArray.__dict__["__cuda_array_interface__"])
    _ACTIVE = tape
    launch.launch, launch.launch_blocks, launch.alloc = _launch, _launch_blocks, _alloc
    CudaArray.from_host = classmethod(_from_host)
    CudaArray.to_host = _to_host
    CudaArray.device_array = _device_array
    CudaArray.__cuda_array_interface__ = property(_interface)
    return True


def uninstall(tape, installed):
    """Put numgrad's own functions back."""
    global _ACTIVE
    _ACTIVE = None
    if not installed:
        if "numgrad.kernels.cuda._launch" in sys.modules:
            tape.unreplayable("the CUDA backend was first loaded inside the function")
        return
    launch = sys.modules["numgrad.kernels.cuda._launch"]
    from numgrad.kernels.cuda.array import CudaArray
    launch.launch, launch.launch_blocks = _ORIG["launch"], _ORIG["launch_blocks"]
    launch.alloc = _ORIG["alloc"]
    CudaArray.from_host = _ORIG["from_host"]
    CudaArray.to_host = _ORIG["to_host"]
    CudaArray.device_array = _ORIG["device_array"]
    CudaArray.__cuda_array_interface__ = _ORIG["interface"]
    _ORIG.clear()
