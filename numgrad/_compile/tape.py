"""Recording what one eager run of a function does, as a tape of kernel calls.

While a ``Tape`` is active every call of a Numba CPU kernel from Python (the launchers in
``numgrad/kernels`` call the jitted functions) and every BLAS product (``kernels/cpu/linalg``)
is appended to it with its arguments and result; calls made from inside compiled code are not
Python calls and are not seen. Nothing changes while no tape is active: the recording
``__call__`` is installed on Numba's dispatcher class only for the length of a trace, and
removing it restores Numba's own C call slot.

Host work numgrad does on tensor values (index preparation, casts, copies, random draws) is
recorded too, as a step (``record``, ``record_draw``) a replay runs again. An array a call
reads must come from the tape's own work: the tape notes which arrays are reachable tensors'
data (``known``), results of recorded calls (``produced``), constants numgrad made from Python
values and sizes (``constant``) and memory it allocated for a kernel to write (``uninit``:
filled with 0xff bytes during a trace). Any other array a call reads before a recorded call
wrote it (a call that leaves it unchanged, even when run again on copies with that array
poisoned, reads it) is ``outside``: values computed where the tape could not see, which no
plan may replay.

What a tape cannot replay is noted instead of recorded, and makes the trace unusable (the
compiled function then runs eagerly): Python reading tensor values (``item()``, ``bool()``,
``tolist()``, ...), seeding a generator, user hooks and anomaly checks run by the engine.
Device work on CUDA tensors is recorded on the same tape by ``cuda_tape.py``.
"""

import threading
import zlib

import numpy as np

from numgrad import _hook
from numgrad._compile import cuda_tape

_LOCK = threading.Lock()
_SNAPSHOT_BYTES = 16 << 20  # buffers up to this size can start a replay from traced content


class Tape:
    __slots__ = ("calls", "breaks", "first", "ran_backward", "_depth", "thread", "known",
                 "constants", "outside", "produced", "_keep", "generators", "uninit", "light")

    def __init__(self, light=False):
        # a light tape records the calls and where arrays come from, nothing of their
        # content: it checks that a run is a plan already verified (``dynamic.check``)
        self.light = light
        self.calls = []  # (fn, args, kwargs, result)
        self.breaks = []  # why this run cannot be replayed
        self.first = {}  # id(root) -> the root's content when a call first received it
        self.ran_backward = False
        self._depth = 0
        self.thread = threading.get_ident()
        self.known = set()  # id(root) of the reachable tensors' data (set by the caller)
        self.constants = {}  # id(root) -> root: arrays made from Python values (``constant``)
        self.produced = set()  # id(root) of the arrays recorded calls returned
        # id(root) -> kernel: arrays a call read that no recorded call made or wrote before,
        # that are neither reachable nor registered constants: values computed outside the
        # tape (NumPy on tensor values, say), which a replay would find stale
        self.outside = {}
        self._keep = []  # what ``outside`` and ``produced`` name stays alive (ids are reused)
        self.generators = {}  # id -> the random generators recorded draws read (``record_draw``)
        self.uninit = {}  # id -> array: memory allocated for a kernel to write (``uninit``)

    def _snapshot(self, args, new):
        for a in args:
            if a.__class__ is np.ndarray:
                r = root(a)
                if id(r) not in self.first:
                    small = r.nbytes <= _SNAPSHOT_BYTES
                    self.first[id(r)] = r.copy(order="K") if small else None
                    new.append((r, None if small else _digest(r)))
            elif a.__class__ in (tuple, list):
                self._snapshot(a, new)
        return new

    def _unknown(self, args, new):
        """(root, copy) of the arrays of ``args`` a light tape meets first that are none of
        the reachable tensors' data, constants, results or allocations for a kernel."""
        for a in args:
            if a.__class__ is np.ndarray:
                r = root(a)
                rid = id(r)
                if rid not in self.first:
                    unknown = r.nbytes and not (rid in self.known or rid in self.constants
                                                or rid in self.produced or rid in self.uninit)
                    self.first[rid] = None
                    if unknown:
                        self._keep.append(r)
                        new.append((r, r.copy(order="K")))
            elif a.__class__ in (tuple, list):
                self._unknown(a, new)
        return new

    def call(self, fn, impl, args, kwargs):
        """Run ``impl(*args, **kwargs)`` and record it as a call of ``fn`` (outermost only:
        a recorded launcher's own kernel calls are part of it)."""
        if self._depth or threading.get_ident() != self.thread:
            return impl(*args, **kwargs)
        if self.light:
            new = self._unknown(args, [])
            self._depth += 1
            try:
                result = impl(*args, **kwargs)
            finally:
                self._depth -= 1
            for r, before in new:  # memory of unknown content: the call must write it
                if _same_bytes(before, r) and not self._writes(fn, impl, args, kwargs, r):
                    self.outside[id(r)] = getattr(fn, "__name__", type(fn).__name__)
                    self._keep.append(r)
            self.calls.append((fn, args, kwargs, result))
            for v in (result if result.__class__ is tuple else (result,)):
                if v.__class__ is np.ndarray:
                    self.produced.add(id(root(v)))
                    self._keep.append(v)
            return result
        new = self._snapshot(args, [])
        self._depth += 1
        try:
            result = impl(*args, **kwargs)
        finally:
            self._depth -= 1
        for r, digest in new:
            rid = id(r)
            if rid in self.known or rid in self.constants or rid in self.produced or \
                    not r.nbytes:  # (an empty array holds no values)
                continue
            if rid in self.uninit and _canary(r):
                continue
            if (_digest(r) == digest) if digest is not None else \
                    _same_bytes(self.first[rid], r):
                if not self._writes(fn, impl, args, kwargs, r):
                    self.outside[rid] = getattr(fn, "__name__", type(fn).__name__)
                    self._keep.append(r)
        self.calls.append((fn, args, kwargs, result))
        for v in (result if result.__class__ is tuple else (result,)):
            if v.__class__ is np.ndarray:
                self.produced.add(id(root(v)))
                self._keep.append(v)
        return result

    def _writes(self, fn, impl, args, kwargs, r):
        """Whether the call ``impl(*args)`` writes ``r`` (an argument's buffer whose content
        it left as it was: the output of a kernel that wrote the bytes the memory held, or an
        input). Run again on copies of its arrays, ``r``'s copy holding other values that are
        safe to read as indices (zeros, or -1 for an all-zero one, NaN for floats, the negation
        of a mask); only calls known to have no other effect (Numba kernels, ``PURE``
        functions) are rerun."""
        from numba.core.registry import CPUDispatcher
        if fn.__class__ is not CPUDispatcher and not getattr(fn, "pure", False) and \
                fn not in PURE:
            return False
        if r.dtype.kind == "f" or r.dtype.kind == "c":
            poison = np.full_like(r, np.nan)
        elif r.dtype.kind == "b":
            poison = ~r
        elif r.dtype.kind in "iu" and r.any():
            poison = np.zeros_like(r)
        elif r.dtype.kind == "i":  # all zeros: -1 still reads in bounds (wraps to the end)
            poison = np.full_like(r, -1)
        else:
            return False
        copies = {id(r): poison}
        try:
            new_args = _copied(args, copies)
        except ValueError:
            return False
        before = poison.copy()
        self._depth += 1
        try:
            impl(*new_args, **kwargs)
        except Exception:
            return False
        finally:
            self._depth -= 1
        return not _same_bytes(before, poison)

    def refs(self, base):
        """The references this tape holds to array ``base``: one for each place it is recorded
        or kept, one for each recorded or kept view of it (a view holds its base)."""
        slots, views = 0, set()
        stack = [c for fn, args, kwargs, result in self.calls
                 for c in (args, tuple(kwargs.values()), result)]
        stack += self._keep
        stack += self.uninit.values()
        stack += self.constants.values()
        while stack:
            a = stack.pop()
            if a is base:
                slots += 1
            elif a.__class__ is np.ndarray:
                if a.base is base:
                    views.add(id(a))
            elif a.__class__ in (tuple, list):
                stack.extend(a)
        return slots + len(views)

    def unreplayable(self, why):
        if threading.get_ident() == self.thread and why not in self.breaks:
            self.breaks.append(why)

    # what eager code reports through ``numgrad._hook`` --------------------------------------
    def record(self, fn, args):
        """Call ``fn(*args)`` and record it (BLAS products and the few array operations
        numgrad does outside Numba)."""
        return self.call(fn, fn, args, {})

    def record_draw(self, fn, generator, args):
        """``fn(generator, *args)``: random draws that advance ``generator``, recorded as a
        step that reads the generator's state at each replay. Verification replays such a
        plan from the generator's state before the eager call it checks against
        (``Plan.generators``)."""
        if self._depth or threading.get_ident() != self.thread:
            return fn(generator, *args)
        self.generators[id(generator)] = generator
        return self.call(fn, fn, (generator, *args), {})

    def mark_constant(self, a):
        """Register ``a`` (made during the trace from Python values and tensor shapes only: a
        factory's result, an array of sizes) as a constant a replay may keep."""
        if a.__class__ is np.ndarray:
            r = root(a)
            self.constants[id(r)] = r
            self.first.setdefault(id(r),
                                  r.copy(order="K") if r.nbytes <= _SNAPSHOT_BYTES else None)

    def mark_uninit(self, a):
        """Register ``a``, just allocated (``np.empty``) for a kernel to write, as memory
        whose content means nothing: filled with 0xff bytes, so that a call leaving it as it
        was is known to write it or not to read it, never to read values made outside the
        tape (``numgrad._arrays.new``)."""
        if a.nbytes and threading.get_ident() == self.thread and (
                a.flags.c_contiguous or a.flags.f_contiguous):
            if not self.light:
                a.reshape(-1, order="A").view(np.uint8).fill(255)
            self.uninit[id(a)] = a


# host functions a trace may rerun on copies (see ``_writes``)
PURE = {np.ascontiguousarray, np.copyto, np.flatnonzero, np.reshape}


def _canary(r):
    """Whether ``r`` (C or F contiguous) holds 0xff bytes only."""
    b = r.reshape(-1, order="A").view(np.uint8)
    return not (b != 255).any()


def _digest(r):
    return zlib.crc32(r if r.flags.c_contiguous else r.tobytes(order="K"))


def _same_bytes(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and \
        np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _copied(args, copies):
    """``args`` with every array a view of a copy of its buffer (``copies``: id(root) -> the
    copy, filled in here). Raises ValueError for a buffer whose layout cannot be copied."""
    out = []
    for a in args:
        if a.__class__ is np.ndarray:
            r = root(a)
            c = copies.get(id(r))
            if c is None:
                if not (r.flags.c_contiguous or r.flags.f_contiguous):
                    raise ValueError
                c = copies[id(r)] = r.copy(order="K")
            out.append(np.ndarray(a.shape, a.dtype, c, address(a) - address(r), a.strides))
        elif a.__class__ in (tuple, list):
            out.append(type(a)(_copied(a, copies)))
        else:
            out.append(a)
    return out


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
    return _hook.TAPE.call(self, _NUMBA_CALL.__get__(self), args, kwargs)


_NUMBA_CALL = None


def start(light=False):
    """Make a new tape the active one (``numgrad._hook.TAPE``) and route kernel calls to it."""
    global _NUMBA_CALL
    from numba._dispatcher import Dispatcher
    from numba.core.registry import CPUDispatcher
    _LOCK.acquire()
    _NUMBA_CALL = Dispatcher.__call__
    tape = Tape(light)
    _hook.attach(tape)
    CPUDispatcher.__call__ = _recording_call
    _CUDA[0] = cuda_tape.install(tape)
    return tape


_CUDA = [False]  # whether the active tape records CUDA work


def stop():
    from numba.core.registry import CPUDispatcher
    try:
        del CPUDispatcher.__call__
    finally:
        try:
            cuda_tape.uninstall(_hook.TAPE, _CUDA[0])
        finally:
            _hook.attach(None)
            _LOCK.release()
