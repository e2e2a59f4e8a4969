"""The profiler's hook into op dispatch: while a profiler records, it is a client of
``numgrad._intercept``, whose wrappers over numgrad's op entry points time each call under
the op's name (an entry point that hands over to its own op, ``Tensor.__add__`` to ``add``,
is one call). The originals are put back when recording stops, so with no profiler active
ops run exactly the functions they always run: nothing is checked per call. Only the ops of
the thread that started the profiler are recorded.

Events are recorded by ``Recorder``: (name, start ns, end ns, depth, input shapes), nested as
the calls nest."""

import functools
import time

from numgrad import _intercept

RECORDER = None  # the active Recorder, or None


class Recorder:
    __slots__ = ("events", "stack", "shapes", "t0")

    def __init__(self, record_shapes):
        self.events = []  # [name, start, end, depth, shapes, kind]
        self.stack = []
        self.shapes = record_shapes
        self.t0 = time.perf_counter_ns()

    def begin(self, name, args, kind="cpu_op"):
        ev = [name, time.perf_counter_ns(), 0, len(self.stack),
              _shapes(args) if self.shapes else [], kind]
        self.events.append(ev)
        self.stack.append(ev)
        return ev

    def end(self, ev):
        ev[2] = time.perf_counter_ns()
        stack = self.stack
        while stack:  # an exception may leave inner ranges open: close them with this one
            top = stack.pop()
            if top is ev:
                break
            top[2] = ev[2]


def _shapes(args):
    """PyTorch's "Input Dims": a tensor's sizes, [] for anything else (lists of tensors as a
    list of sizes)."""
    from numgrad.tensor import Tensor
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(list(a._data.shape))
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
            out.append([list(x._data.shape) for x in a])
        else:
            out.append([])
    return out


def _timed(site, fn):
    name = site.name

    @functools.wraps(fn)
    def profiled(*args, **kwargs):
        rec = RECORDER
        if rec is None:  # called after recording stopped, through a reference kept meanwhile
            return fn(*args, **kwargs)
        top = rec.stack[-1] if rec.stack else None
        if top is not None and top[0] == name and top[5] == "cpu_op":
            return fn(*args, **kwargs)  # an entry point handing over to its own op: one call
        ev = rec.begin(name, args)
        try:
            return fn(*args, **kwargs)
        finally:
            rec.end(ev)
    profiled.__profiled__ = fn
    return profiled


_CLIENT = None  # the numgrad._intercept client while recording


def start(recorder):
    """Begin recording into ``recorder`` (one at a time, as PyTorch's profilers)."""
    global RECORDER, _CLIENT
    if RECORDER is not None:
        raise RuntimeError("Profiler is already enabled on this thread")
    client = _intercept.Client(_timed)
    client.enter()
    RECORDER, _CLIENT = recorder, client


def stop():
    global RECORDER, _CLIENT
    client, RECORDER, _CLIENT = _CLIENT, None, None
    if client is not None:
        client.leave()
