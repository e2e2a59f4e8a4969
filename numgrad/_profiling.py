"""The profiler's hook into op dispatch: while a profiler records, every registered op's
function (``ops.registry.REGISTRY``: ``od.fn``, its hand-written in-place form, its method
form) is swapped, wherever numgrad holds it (module globals, ``Tensor``'s attributes, the
closure cells of operator methods such as ``Tensor.__add__``), for a wrapper that times the
call under the op's registry name; in-place methods installed on ``Tensor`` (``add_``) are
timed under their own name. The originals are put back when recording stops, so with no
profiler active ops run exactly the functions they always run: nothing is checked per call.

Events are recorded by ``Recorder``: (name, start ns, end ns, depth, input shapes), nested as
the calls nest."""

import functools
import sys
import time
import types

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


def _timed(name, fn):
    @functools.wraps(fn)
    def profiled(*args, **kwargs):
        rec = RECORDER
        if rec is None:  # called after recording stopped, through a reference kept meanwhile
            return fn(*args, **kwargs)
        ev = rec.begin(name, args)
        try:
            return fn(*args, **kwargs)
        finally:
            rec.end(ev)
    profiled.__profiled__ = fn
    return profiled


def _registered():
    """id(function) -> (op name, function) for every registered op function."""
    from numgrad.ops.registry import REGISTRY
    out = {}
    for od in REGISTRY.values():
        for f, name in ((od.fn, od.name), (getattr(od, "inplace_fn", None), od.name + "_"),
                        (getattr(od, "method", None), od.name)):
            if isinstance(f, types.FunctionType):
                out[id(f)] = (name, f)
    return out


def _swaps():
    """Where numgrad holds a registered op function: [(container, key, original, name)],
    a container being a dict (module globals), the Tensor class or a closure cell."""
    from numgrad.ops.registry import REGISTRY
    from numgrad.tensor import Tensor
    reg = _registered()
    sites = []
    seen_cells = set()

    def cells_of(f):
        for cell in f.__closure__ or ():
            if id(cell) in seen_cells:
                continue
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            hit = reg.get(id(v))
            if hit is not None and hit[1] is v:
                seen_cells.add(id(cell))
                sites.append((cell, None, v, hit[0]))

    for mod_name, mod in list(sys.modules.items()):
        if not (mod_name == "numgrad" or mod_name.startswith("numgrad.")) or mod is None:
            continue
        d = getattr(mod, "__dict__", None)
        if d is None or mod_name == __name__:
            continue
        for k, v in list(d.items()):
            hit = reg.get(id(v))
            if hit is not None and hit[1] is v:
                sites.append((d, k, v, hit[0]))
            elif isinstance(v, types.FunctionType):
                cells_of(v)
    for k, v in list(vars(Tensor).items()):
        if not isinstance(v, types.FunctionType):
            continue
        hit = reg.get(id(v))
        if hit is not None and hit[1] is v:
            sites.append((Tensor, k, v, k if k.endswith("_") else hit[0]))
        elif k.endswith("_") and not k.startswith("__") and k[:-1] in REGISTRY:
            sites.append((Tensor, k, v, k))  # a generated in-place method
        else:
            cells_of(v)
    return sites


_ACTIVE = []  # the swaps in place while recording


def start(recorder):
    """Begin recording into ``recorder`` (one at a time, as PyTorch's profilers)."""
    global RECORDER
    if RECORDER is not None:
        raise RuntimeError("Profiler is already enabled on this thread")
    wrappers = {}
    for container, key, original, name in _swaps():
        w = wrappers.get((id(original), name))
        if w is None:
            w = wrappers[(id(original), name)] = _timed(name, original)
        _set(container, key, w)
        _ACTIVE.append((container, key, original))
    RECORDER = recorder


def stop():
    global RECORDER
    RECORDER = None
    while _ACTIVE:
        container, key, original = _ACTIVE.pop()
        _set(container, key, original)
    # a numgrad module first imported while recording took wrappers into its globals
    for mod_name, mod in list(sys.modules.items()):
        if mod is not None and (mod_name == "numgrad" or mod_name.startswith("numgrad.")):
            d = getattr(mod, "__dict__", None) or {}
            for k, v in list(d.items()):
                original = getattr(v, "__profiled__", None) if callable(v) else None
                if original is not None and isinstance(v, types.FunctionType):
                    d[k] = original


def _set(container, key, value):
    if isinstance(container, dict):
        container[key] = value
    elif isinstance(container, type):
        setattr(container, key, value)
    else:
        container.cell_contents = value
