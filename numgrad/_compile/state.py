"""The tensors a compiled function can reach, and the signature a trace is guarded on.

A trace replays kernel calls on arrays, so it must know, at every call, where the arrays it
was traced on are now: the arguments' data, and the state the function reaches through its
closure and globals (a module's parameters and buffers, an optimizer's state, gradients).
``reachable`` finds those tensors the way the function can see them; ``signature`` is what
must be equal for a trace to be replayed (shapes, strides, dtypes, devices, requires_grad,
which gradients exist, which tensors share memory, the grad mode and the optimizers'
hyperparameters).
"""

import dis
import types

import numpy as np

from numgrad._compile.cuda_plan import device_key
from numgrad._compile.tape import address, root
from numgrad.autograd import grad_mode
from numgrad.tensor import Tensor

_SCALARS = (bool, int, float, complex, str, type(None))


# class -> "tensor" / "module" / "optimizer" / "seq" / "map" / "method" / "" (nothing to see)
_KINDS = dict.fromkeys(_SCALARS, "")


_LIBRARIES = ("numgrad", "numpy", "numba", "builtins", "torch", "jax", "collections",
              "functools", "typing")


def _kind(cls):
    kind = _KINDS.get(cls)
    if kind is None:
        from numgrad.nn.modules.module import Module
        from numgrad.optim.optimizer import Optimizer
        kind = ("tensor" if issubclass(cls, Tensor) else "module" if issubclass(cls, Module)
                else "optimizer" if issubclass(cls, Optimizer)
                else "seq" if issubclass(cls, (list, tuple)) else "map" if issubclass(cls, dict)
                else "method" if hasattr(cls, "__func__") and hasattr(cls, "__self__")
                else "function" if cls is types.FunctionType
                else "object" if _user_class(cls)
                else "")
        _KINDS[cls] = kind
    return kind


def _user_class(cls):
    """Whether instances of ``cls`` are a program's own objects, whose attributes may hold
    the model and optimizer (a trainer), rather than a library's or Python's."""
    return (not issubclass(cls, (type, types.ModuleType)) and "__dict__" in dir(cls)
            and cls.__module__.partition(".")[0] not in _LIBRARIES)


_PLAIN = frozenset(_SCALARS) | {np.float64, np.float32, np.int64, np.int32, np.bool_}


def _value(v):
    """What a plain value contributes to the signature (numbers, strings, None), else None.
    Floats by their bits: -0.0 is not 0.0, and a nan equals a nan."""
    cls = v.__class__
    if cls is float:
        return (float, v.hex())
    if cls in _SCALARS:
        return (cls, v)
    if isinstance(v, np.generic):
        return (cls, v.tobytes())
    return None


class Reach:
    """Tensors (in a stable order, each once) and optimizers reachable from a call, and the
    plain values (numbers, strings) the call is specialised to: its arguments', and those in
    the closure cells and globals of the function (and of the functions it calls). Numbers
    held in lists, dicts or objects' attributes are not: a trace keeps the value it saw."""

    __slots__ = ("tensors", "optimizers", "values", "_seen")

    def __init__(self):
        self.tensors = []
        self.optimizers = []
        self.values = []
        self._seen = set()

    def value(self, v):
        key = _value(v)
        if key is not None:
            self.values.append(key)

    def add(self, obj, depth=0):
        kind = _KINDS.get(obj.__class__)
        if kind is None:
            kind = _kind(obj.__class__)
        if not kind:
            return
        seen = self._seen
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if kind == "tensor":
            self.tensors.append(obj)
            g = obj._grad
            if g is not None and id(g) not in seen:  # a gradient is a plain tensor
                seen.add(id(g))
                self.tensors.append(g)
                if g._grad is not None:
                    self.add(g._grad)
        elif kind == "module":
            for t in obj.parameters():
                self.add(t)
            for t in obj.buffers():
                self.add(t)
        elif kind == "optimizer":
            self.optimizers.append(obj)
            for group in obj.param_groups:
                for p in group["params"]:
                    self.add(p)
                    for v in obj.state.get(p, {}).values():
                        if isinstance(v, Tensor):
                            self.add(v)
        elif depth < 3 and kind == "seq":
            for v in obj:
                self.add(v, depth + 1)
        elif depth < 3 and kind == "map":
            for v in obj.values():
                self.add(v, depth + 1)
        elif depth < 2 and kind == "method":
            self.add(obj.__self__, depth + 1)  # a bound method: its object's state
        elif depth < 2 and kind == "object":
            for v in vars(obj).values():  # a trainer's model, optimizer, data
                self.add(v, depth + 1)
        elif depth < 3 and kind == "function" and not obj.__module__.startswith("numgrad"):
            _add_function(self, obj, depth + 1)  # a function the program calls


def reachable(fn, args, kwargs):
    """The ``Reach`` of calling ``fn(*args, **kwargs)``: the arguments, then what ``fn`` reads
    from its closure and from the globals its code names."""
    reach = Reach()
    if args:
        reach.add(args)
        for a in args:
            reach.value(a)
    if kwargs:
        reach.add(kwargs)
        for k, v in kwargs.items():
            reach.values.append(k)
            reach.value(v)
    _add_function(reach, fn)
    return reach


def _add_function(reach, fn, depth=0):
    if fn.__class__ is not types.FunctionType:
        if _kind(fn.__class__) == "module":
            reach.add(fn)
            fn = type(fn).forward
        self = getattr(fn, "__self__", None)
        if self is not None:
            reach.add(self, depth)
            fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    reach._seen.add(id(fn))
    add = reach.add
    closure = fn.__closure__
    if closure:
        for cell in closure:
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if v.__class__ in _PLAIN:
                reach.value(v)
            else:
                add(v, depth)
    names = _NAMES.get(code)
    if names is None:
        names = _NAMES[code] = _global_names(code)
    if names:
        g = fn.__globals__
        for name in names:
            v = g.get(name)
            if v is not None:
                if v.__class__ in _PLAIN:
                    reach.value(v)
                else:
                    add(v, depth)


_NAMES = {}


def _global_names(code):
    """The global names ``code`` (and the code nested in it) loads, each once."""
    names = [i.argval for i in dis.get_instructions(code)
             if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names.extend(_global_names(c))
    return tuple(dict.fromkeys(names))


def _optimizer_key(opt):
    groups = tuple(tuple((k, v) for k, v in g.items() if k != "params" and v.__class__ in
                         _SCALARS) for g in opt.param_groups)
    return type(opt), groups, len(opt.state)


def signature(reach):
    """What a trace of this call is specialised to; equal signatures replay the same tape."""
    state = grad_mode.state
    parts = [state.enabled, bool(state.inference)]
    roots = {}
    shared = False
    append = parts.append
    for t in reach.tensors:
        a = t._data
        if a.__class__ is not np.ndarray:
            append(device_key(t, a, roots))  # CUDA data: its layout in its buffer
            continue
        r = id(a) if a.base is None else id(root(a))
        n = roots.get(r)
        if n is None:
            n = roots[r] = len(roots)
        else:
            shared = True
        append((a.shape, a.strides, a.dtype, t._requires_grad, t._grad is None,
                t._grad_fn is None, n))
    if shared:  # tensors that share memory: where each one starts, relative to the first
        first = {}
        for t in reach.tensors:
            a = t._data
            if a.__class__ is np.ndarray:
                base = first.setdefault(id(root(a)), address(a))
                parts.append(address(a) - base)
    for opt in reach.optimizers:
        parts.append(_optimizer_key(opt))
    if reach.values:
        parts.append(tuple(reach.values))
    return tuple(parts)
