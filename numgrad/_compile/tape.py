"""Recording what one eager run of a function does, as a tape of kernel calls.

While a ``Tape`` is active every call of a Numba CPU kernel from Python (the launchers in
``numgrad/kernels`` call the jitted functions) and every BLAS product (``kernels/cpu/linalg``)
is appended to it with its arguments and result; calls made from inside compiled code are not
Python calls and are not seen. Nothing changes while no tape is active: the recording
``__call__`` is installed on Numba's dispatcher class only for the length of a trace, and
removing it restores Numba's own C call slot.

What a tape cannot replay is noted instead of recorded, and makes the trace unusable (the
compiled function then runs eagerly): Python reading tensor values (``item()``, ``bool()``,
``tolist()``, ...), user hooks and anomaly checks run by the engine. Device work on CUDA
tensors is recorded on the same tape by ``cuda_tape.py``.
"""

import threading

import numpy as np

from numgrad._compile import cuda_tape

TAPE = None  # the active Tape, read by the few places in numgrad that must report to it
_LOCK = threading.Lock()
_SNAPSHOT_BYTES = 16 << 20  # buffers up to this size can start a replay from traced content


class Tape:
    __slots__ = ("calls", "breaks", "first", "ran_backward", "_depth", "thread")

    def __init__(self):
        self.calls = []  # (fn, args, kwargs, result)
        self.breaks = []  # why this run cannot be replayed
        self.first = {}  # id(root) -> the root's content when a call first received it
        self.ran_backward = False
        self._depth = 0
        self.thread = threading.get_ident()

    def _snapshot(self, args):
        for a in args:
            if a.__class__ is np.ndarray:
                r = root(a)
                if id(r) not in self.first:
                    self.first[id(r)] = r.copy(order="K") if r.nbytes <= _SNAPSHOT_BYTES \
                        else None
            elif a.__class__ in (tuple, list):
                self._snapshot(a)

    def call(self, fn, impl, args, kwargs):
        """Run ``impl(*args, **kwargs)`` and record it as a call of ``fn`` (outermost only:
        a recorded launcher's own kernel calls are part of it)."""
        if self._depth or threading.get_ident() != self.thread:
            return impl(*args, **kwargs)
        self._snapshot(args)
        self._depth += 1
        try:
            result = impl(*args, **kwargs)
        finally:
            self._depth -= 1
        self.calls.append((fn, args, kwargs, result))
        return result

    def unreplayable(self, why):
        if threading.get_ident() == self.thread and why not in self.breaks:
            self.breaks.append(why)


def root(a):
    """The array that owns ``a``'s memory (``a`` itself when it owns it)."""
    r = a
    b = r.base
    while b is not None:  # through NumPy's stride-trick wrappers too (broadcast_to, ...)
        if b.__class__ is np.ndarray:
            r = b
        b = getattr(b, "base", None)
    return r


def address(a):
    return a.__array_interface__["data"][0]


def _recording_call(self, *args, **kwargs):
    return TAPE.call(self, _NUMBA_CALL.__get__(self), args, kwargs)


_NUMBA_CALL = None


def start():
    """Make a new tape the active one and route kernel calls to it."""
    global TAPE, _NUMBA_CALL
    from numba._dispatcher import Dispatcher
    from numba.core.registry import CPUDispatcher
    _LOCK.acquire()
    _NUMBA_CALL = Dispatcher.__call__
    TAPE = Tape()
    CPUDispatcher.__call__ = _recording_call
    _CUDA[0] = cuda_tape.install(TAPE)
    return TAPE


_CUDA = [False]  # whether the active tape records CUDA work


def stop():
    global TAPE
    from numba.core.registry import CPUDispatcher
    try:
        del CPUDispatcher.__call__
    finally:
        try:
            cuda_tape.uninstall(TAPE, _CUDA[0])
        finally:
            TAPE = None
            _LOCK.release()


def host_read(what):
    """Python is reading tensor values (``what``): a trace cannot replay that."""
    tape = TAPE
    if tape is not None:
        tape.unreplayable(f"{what} reads a tensor's values in Python")


def record(fn, *args):
    """Call ``fn(*args)``, recording it on the active tape (BLAS products and the few array
    operations numgrad does outside Numba)."""
    tape = TAPE
    if tape is None:
        return fn(*args)
    return tape.call(fn, fn, args, {})
