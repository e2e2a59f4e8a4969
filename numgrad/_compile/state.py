"""The tensors a compiled function can reach, and the signature a trace is guarded on.

A trace replays kernel calls on arrays, so it must know, at every call, where the arrays it
was traced on are now: the arguments' data, and the state the function reaches through its
closure and globals (a module's parameters and buffers, an optimizer's state, gradients).
``reachable`` finds those tensors the way the function can see them; ``signature`` is what
must be equal for a trace to be replayed (shapes, strides, dtypes, devices, requires_grad,
which gradients exist, which tensors share memory, the grad mode and the optimizers'
hyperparameters).
"""

import numpy as np

from numgrad._compile.cuda_plan import device_key
from numgrad._compile.tape import address, root
from numgrad.autograd import grad_mode
from numgrad.tensor import Tensor

_SCALARS = (bool, int, float, complex, str, type(None))


# class -> "tensor" / "module" / "optimizer" / "seq" / "map" / "method" / "" (nothing to see)
_KINDS = dict.fromkeys(_SCALARS, "")


def _kind(cls):
    kind = _KINDS.get(cls)
    if kind is None:
        from numgrad.nn.modules.module import Module
        from numgrad.optim.optimizer import Optimizer
        kind = ("tensor" if issubclass(cls, Tensor) else "module" if issubclass(cls, Module)
                else "optimizer" if issubclass(cls, Optimizer)
                else "seq" if issubclass(cls, (list, tuple)) else "map" if issubclass(cls, dict)
                else "method" if hasattr(cls, "__func__") and hasattr(cls, "__self__")
                else "")
        _KINDS[cls] = kind
    return kind


class Reach:
    """Tensors (in a stable order, each once) and optimizers reachable from a call."""

    __slots__ = ("tensors", "optimizers", "_seen")

    def __init__(self):
        self.tensors = []
        self.optimizers = []
        self._seen = set()

    def add(self, obj, depth=0):
        kind = _KINDS.get(obj.__class__)
        if kind is None:
            kind = _kind(obj.__class__)
        if not kind or id(obj) in self._seen:
            return
        self._seen.add(id(obj))
        if kind == "tensor":
            self.tensors.append(obj)
            if obj._grad is not None:
                self.add(obj._grad)
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


def reachable(fn, args, kwargs):
    """The ``Reach`` of calling ``fn(*args, **kwargs)``: the arguments, then what ``fn`` reads
    from its closure and from the globals its code names."""
    reach = Reach()
    if args:
        reach.add(args)
    if kwargs:
        reach.add(kwargs)
    _add_function(reach, fn)
    return reach


def _add_function(reach, fn):
    if _kind(fn.__class__) == "module":
        reach.add(fn)
        fn = type(fn).forward
    self = getattr(fn, "__self__", None)
    if self is not None:
        reach.add(self)
        fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    for cell in fn.__closure__ or ():
        try:
            reach.add(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    g = fn.__globals__
    names = _NAMES.get(code)
    if names is None:
        names = _NAMES[code] = tuple(dict.fromkeys(_names(code)))
    for name in names:
        v = g.get(name)
        if v is not None:
            reach.add(v)


_NAMES = {}


def _names(code):
    names = list(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names.extend(_names(c))
    return names


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
    for t in reach.tensors:
        a = t._data
        if a.__class__ is not np.ndarray:
            parts.append(device_key(t, a, roots))  # CUDA data: its layout in its buffer
            continue
        r = a if a.base is None else root(a)
        n = roots.get(id(r))
        if n is None:
            n = roots[id(r)] = len(roots)
        else:
            shared = True
        parts.append((a.shape, a.strides, a.dtype, t._requires_grad, t._grad is None,
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
    return tuple(parts)
