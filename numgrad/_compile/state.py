"""The tensors a compiled function can reach, and the guard its traces are specialised to.

A trace replays kernel calls on arrays, so it must know, at every call, where the arrays it
was traced on are now: the arguments' data, and the state the function reaches through its
closure and globals (a module's parameters and buffers, an optimizer's state, gradients).
``reachable`` finds those tensors the way the function can see them, and writes down, as it
goes, everything else the trace may have depended on: the *guard*. ``signature`` is the guard
plus each tensor's layout; a call replays a plan only when its signature equals the one the
plan was traced with, else it traces again (as TorchDynamo's guards make torch.compile
recompile).

The guard is the structure of everything reachable, walked fully (each object once; a
repeated object is written as a reference to its first place, so ``f(x, x)`` is not
``f(x, y)``): the arguments' count, keyword names and kinds; numbers, strings, None, tuples,
lists, dicts and sets by value at any depth; each module's class, ``training`` flag, plain
attributes (numbers, tuples, plain tensor attributes) and submodules, parameters and buffers;
each optimizer's hyperparameters and state; user objects' attributes (a trainer holding the
model), their classes' plain attributes; functions the program calls, with their closure
cells, defaults and the globals (and attributes of user modules) their code names; and the
grad mode, default dtype and autocast state. Library objects (NumPy arrays,
NumPy, numgrad itself) are not walked: a tensor made from a NumPy array inside the function
is data the tape sees made outside its kernels, which no plan replays (``tape.Tape.outside``).
"""

import array
import collections
import dis
import functools
import random
import types
import zlib

import numpy as np

from numgrad import _dtype, amp
from numgrad._compile.cuda_plan import device_key
from numgrad._compile.tape import address, root
from numgrad._factories import _DEFAULT_DEVICE as _DEVICE
from numgrad.autograd import grad_mode
from numgrad.tensor import Tensor

_SCALARS = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), slice)
_LIBRARIES = ("numgrad", "numpy", "numba", "builtins", "torch", "jax", "collections",
              "functools", "typing", "abc", "enum", "math", "random", "threading", "warnings",
              "contextlib", "dataclasses", "weakref", "types", "tqdm", "matplotlib", "sklearn")
MAX_ITEMS = 200_000  # a guard larger than this is not worth its cost: the function runs eagerly


class Same:
    """An object the guard compares by identity (a module, a builtin function, a ufunc, an
    object it does not look into): equal only to itself, and kept alive with the signature,
    so its id cannot be reused."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return other.__class__ is Same and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


class TooMuchState(Exception):
    """What a compiled function reaches cannot be guarded at every call (too large, or
    numbers from Python's random module or the clock)."""


# class -> how its instances are walked
_KINDS = dict.fromkeys((bool, int, str, bytes, complex, type(None), type(Ellipsis)), "value")
_KINDS.update({float: "float", slice: "slice"})


def _kind(cls):
    kind = _KINDS.get(cls)
    if kind is None:
        from numgrad.nn.modules.module import Module
        from numgrad.optim.optimizer import Optimizer
        kind = ("tensor" if issubclass(cls, Tensor)
                else "npscalar" if issubclass(cls, np.generic)
                else "ndarray" if issubclass(cls, (np.ndarray, bytearray, memoryview))
                else "float" if issubclass(cls, float)
                else "value" if issubclass(cls, _SCALARS)
                else "module" if issubclass(cls, Module)
                else "optimizer" if issubclass(cls, Optimizer)
                else "seq" if issubclass(cls, (list, tuple, collections.deque, array.array))
                else "map" if issubclass(cls, dict)
                else "set" if issubclass(cls, (set, frozenset))
                else "method" if cls is types.MethodType
                else "function" if cls is types.FunctionType
                else "partial" if issubclass(cls, functools.partial)
                else "unguardable" if issubclass(cls, _GENERATORS)
                else "object" if _walked_class(cls)
                else "callable" if _user_class(cls, objects=False) and callable(cls)
                else "library")
        _KINDS[cls] = kind
    return kind


# numgrad's objects that hold numbers a step reads: walked as a program's own objects
_WALKED = ("numgrad.optim.lr_scheduler", "numgrad.amp")


def _user_class(cls, objects=True):
    """Whether ``cls`` is a program's own (not a library's or Python's), or one of numgrad's
    helpers holding numbers (a learning-rate scheduler, a gradient scaler): its instances'
    attributes may hold the model, the optimizer, settings."""
    if issubclass(cls, (type, types.ModuleType)):
        return False
    if objects and "__dict__" not in dir(cls):
        return False
    module = cls.__module__ or ""
    return module.partition(".")[0] not in _LIBRARIES or module in _WALKED


# objects whose attributes are not the program's state: numgrad's internals (a generator's
# draws are recorded steps, nodes and kernels hold no program values) and Python's machinery
_NOT_WALKED = ("numgrad._compile", "numgrad.kernels", "numgrad.autograd", "numgrad.random",
               "numba", "builtins", "typing", "abc", "enum", "threading", "weakref",
               "contextlib", "warnings", "logging", "io", "_io", "importlib")


def _walked_class(cls):
    """Whether instances of ``cls`` have their attributes walked: the program's objects and
    other libraries' (a number a step reads from one is guarded), not numgrad's internals or
    Python's machinery."""
    if issubclass(cls, (type, types.ModuleType)) or not ("__dict__" in dir(cls) or
                                                         _slots(cls)):
        return False
    module = cls.__module__ or ""
    return not any(module == m or module.startswith(m + ".") for m in _NOT_WALKED)


_SLOTS = {}


def _slots(cls):
    """The names of the slots a class without ``__dict__`` declares (its MRO's)."""
    names = _SLOTS.get(cls)
    if names is None:
        names = []
        for klass in cls.__mro__:
            slots = vars(klass).get("__slots__", ())
            names += [slots] if isinstance(slots, str) else list(slots)
        names = _SLOTS[cls] = tuple(n for n in dict.fromkeys(names) if n != "__weakref__")
    return names


def _user_module(m):
    return m.__class__ is types.ModuleType and m.__name__.partition(".")[0] not in _LIBRARIES


# cls -> (the plain attributes of its user classes: numbers, strings, tuples, read through
# its instances, ``self.scale`` when only the class sets it; the functions they define)
_CLASS_PARTS = {}


def _class_parts(cls):
    parts = _CLASS_PARTS.get(cls)
    if parts is None:
        names, functions = [], []
        for klass in cls.__mro__:
            if (klass.__module__ or "").partition(".")[0] in _LIBRARIES:
                continue
            for k, v in vars(klass).items():
                if v.__class__ in (staticmethod, classmethod):
                    v = v.__func__
                if v.__class__ is types.FunctionType:
                    functions.append(v)
                elif not k.startswith("__") and _kind(v.__class__) in _CLASS_KINDS:
                    names.append(k)
        parts = _CLASS_PARTS[cls] = (tuple(dict.fromkeys(names)), tuple(functions))
    return parts


def _value(v, kind):
    """What a plain value contributes to the guard. Floats by their bits: -0.0 is not 0.0, and
    a nan equals a nan."""
    if kind == "float":
        return (v.__class__, float.hex(v))
    if kind == "npscalar":
        return (v.__class__, v.tobytes())
    if kind == "slice":
        return (slice, v.start, v.stop, v.step) if all(
            _kind(x.__class__) == "value" for x in (v.start, v.stop, v.step)) else (slice, None)
    if kind == "ndarray":  # a NumPy array the program reads numbers from: by its content
        if v.__class__ is not np.ndarray:  # a bytearray or memoryview: its bytes
            v = np.frombuffer(v, np.uint8) if v.__class__ is bytearray else np.asarray(v)
        if v.nbytes > MAX_ARRAY_BYTES or v.dtype.hasobject:
            raise TooMuchState(f"it reaches a NumPy array of {v.nbytes} bytes, whose values "
                               "cannot be guarded at every call")
        return (v.__class__, v.shape, v.dtype, zlib.crc32(np.ascontiguousarray(v)))
    return (v.__class__, v)


MAX_ARRAY_BYTES = 1 << 20
_PLAIN_KINDS = frozenset(("value", "float", "npscalar", "slice", "ndarray"))


class Reach:
    """Tensors (in a stable order, each once) and optimizers reachable from a call, and the
    guard (``values``) written while finding them (see the module docstring)."""

    __slots__ = ("tensors", "optimizers", "values", "layouts", "_seen", "_n", "_roots",
                 "shared")

    def __init__(self):
        self.tensors = []
        self.optimizers = []
        self.values = []
        self.layouts = []  # where in ``values`` each tensor's layout is
        self._seen = {}  # id -> its place in the walk
        self._n = 0
        self._roots = {}  # id of the memory a tensor's data views -> its number
        self.shared = False  # whether two tensors view one memory

    def add(self, obj):
        self.walk((obj,))

    def walk(self, objs):
        """Add each of ``objs``: plain values inline, the rest by kind."""
        values = self.values
        kinds = _KINDS
        seen = self._seen
        for obj in objs:
            cls = obj.__class__
            kind = kinds.get(cls) or _kind(cls)
            if kind == "value":
                values.append((cls, obj))
                continue
            if kind in _PLAIN_KINDS:
                values.append(_value(obj, kind))
                continue
            if kind == "library":
                if (cls is types.ModuleType and obj.__name__ in _UNGUARDABLE
                        or isinstance(getattr(obj, "__self__", None), _GENERATORS)):
                    raise TooMuchState(_UNGUARDED)
                values.append(Same(obj))  # a module, a builtin function, a ufunc: by identity
                continue
            if kind == "unguardable":
                raise TooMuchState(_UNGUARDED)
            if kind == "function":
                _add_function(self, obj)
                continue
            if (kind == "seq" or kind == "map") and not obj:
                values.append(cls)
                continue
            at = seen.get(id(obj))
            if at is not None:
                values.append(("ref", at))
                continue
            seen[id(obj)] = self._n
            self._n += 1
            if self._n > MAX_ITEMS:
                raise TooMuchState
            if kind == "tensor":
                self.layouts.append(len(values))
                values.append(self._layout(obj))
                self.tensors.append(obj)
                g = obj._grad
                if g is not None:  # a gradient is a plain tensor
                    at = seen.get(id(g))
                    if at is not None:
                        values.append(("ref", at))
                    elif g._grad is not None:
                        self.walk((g,))
                    else:
                        seen[id(g)] = self._n
                        self._n += 1
                        self.layouts.append(len(values))
                        values.append(self._layout(g))
                        self.tensors.append(g)
            elif kind == "module" or kind == "object":
                values.append(cls)
                self._attrs(obj)
            elif kind == "seq":
                values.append((cls, len(obj)))
                self.walk(obj)
            elif kind == "map":
                keys = tuple(obj)
                if all(kinds.get(k.__class__) == "value" for k in keys):
                    values.append((cls, keys))
                else:  # keys that are objects (an optimizer's state): walked as values
                    values.append((cls, len(keys)))
                    self.walk(keys)
                self.walk(obj.values())
            else:
                self._other(obj, cls, kind)

    def _layout(self, t):
        roots = self._roots
        n = len(roots)
        lay = layout(t, roots)
        if len(roots) == n:
            self.shared = True
        return lay

    def _other(self, obj, cls, kind):
        values = self.values
        if kind == "set":
            values.append((cls, frozenset(v for v in obj if _kind(v.__class__) == "value"),
                           len(obj)))
        elif kind == "optimizer":
            self.optimizers.append(obj)
            values.append(cls)
            self._attrs(obj)
        elif kind == "method":
            self.walk((obj.__self__, obj.__func__))
        elif kind == "partial":
            values.append(cls)
            self.walk((obj.func, obj.args, obj.keywords))
        else:  # "callable": a user object without a __dict__
            values.append(cls)
            for f in _class_parts(cls)[1]:
                _add_function(self, f)

    def _attrs(self, obj):
        cls = obj.__class__
        d = getattr(obj, "__dict__", None)
        if d is None:
            d = {k: getattr(obj, k, _MISSING) for k in _slots(cls)}
        self.values.append(tuple(d))
        self.walk(d.values())
        names, functions = _class_parts(cls)
        if names:
            self.walk(getattr(cls, k, None) for k in names if k not in d)
        for f in functions:  # its methods: what their closures and globals hold
            _add_function(self, f)


def layout(t, roots):
    """What a tensor's data contributes to the signature: shape, strides, dtype, autograd
    flags, and which memory it views (``roots``: id of the memory -> its number, in order of
    appearance)."""
    a = t._data
    if a.__class__ is not np.ndarray:  # CUDA data: its layout in its buffer
        return device_key(t, a, roots) + (t._hooks is None and t._post_acc_hooks is None,)
    r = id(a) if a.base is None else id(root(a))
    n = roots.get(r)
    if n is None:
        n = roots[r] = len(roots)
    shape = a.shape
    strides = a.strides
    if 1 in shape or 0 in shape:  # a size-1 (or empty) dim's stride is never used
        strides = tuple(0 if n_ < 2 else s for n_, s in zip(shape, strides))
    return (shape, strides, a.dtype, t._requires_grad, t._grad is None, t._grad_fn is None, n,
            t._hooks is None and t._post_acc_hooks is None)  # hooks run eagerly


def reachable(fn, args, kwargs):
    """The ``Reach`` of calling ``fn(*args, **kwargs)``: the arguments, then what ``fn`` reads
    from its closure and from the globals its code names. Raises ``TooMuchState``."""
    reach = Reach()
    reach.walk((args, kwargs, fn) if kwargs else (args, fn))
    return reach


def _add_function(reach, fn):
    values = reach.values
    seen = reach._seen
    at = seen.get(id(fn))
    if at is not None:
        values.append(("ref", at))
        return
    seen[id(fn)] = reach._n
    reach._n += 1
    code = getattr(fn, "__code__", None)
    if code is None:
        values.append(fn)
        return
    values.append(code)
    info = _CODES.get(id(code))
    if info is None or info[0] is not code:
        info = _CODES[id(code)] = (code, _library(fn.__module__), _global_names(code))
    if info[1]:
        return  # numgrad's own functions (and the libraries') keep no state of the program's
    walk = reach.walk
    if fn.__defaults__:
        walk(fn.__defaults__)
    if fn.__kwdefaults__:
        walk((fn.__kwdefaults__,))
    closure = fn.__closure__
    if closure:
        try:
            walk([cell.cell_contents for cell in closure])
        except ValueError:  # an empty cell (a name not assigned yet)
            walk([_content(cell) for cell in closure])
    names = info[2]
    if names:
        g = fn.__globals__
        plain = []
        for name in names:
            v = g.get(name, _MISSING)
            cls = v.__class__
            if cls is types.ModuleType:
                if v.__name__ == "numpy" and "random" in code.co_names:
                    raise TooMuchState(_UNGUARDED)  # np.random.*: a generator no guard sees
                if v.__name__ in _UNGUARDABLE:
                    raise TooMuchState(_UNGUARDED)
                values.append(Same(v))
                if _user_module(v):  # a program's settings module: the names the code reads
                    walk(w for w in (getattr(v, a, _MISSING) for a in code.co_names)
                         if w is not _MISSING and w.__class__ is not types.ModuleType)
            elif cls is type:
                values.append(v)
                if _user_class(v, objects=False):  # class attributes the code may read
                    d = vars(v)
                    walk(w for w in (d.get(a, _MISSING) for a in code.co_names)
                         if w is not _MISSING and _kind(w.__class__) in _CLASS_KINDS)
            elif v is _MISSING:
                values.append(_MISSING)
            else:
                plain.append(v)
        walk(plain)


_UNGUARDABLE = ("random", "time", "secrets", "numpy.random", "datetime")
_GENERATORS = (random.Random, np.random.Generator, np.random.RandomState)
_UNGUARDED = ("it draws numbers from Python's or NumPy's random generators or reads the clock, "
              "which no guard can see")


def _content(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def _library(module):
    return bool(module) and module.partition(".")[0] in _LIBRARIES


_CODES = {}  # id(code) -> (code, whether a library's, the global names it loads)
_MISSING = object()
_CLASS_KINDS = _PLAIN_KINDS | {"seq", "map", "tensor"}


def _global_names(code):
    """The global names ``code`` (and the code nested in it) loads, each once."""
    names = [i.argval for i in dis.get_instructions(code)
             if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names.extend(_global_names(c))
    return tuple(dict.fromkeys(names))


def _globals():
    """Process state every trace depends on: grad mode, default dtype and device, autocast."""
    state = grad_mode.state
    return (state.enabled, bool(state.inference), _dtype._default[0], _DEVICE[0],
            amp._state["cpu"], amp._state["cuda"])


def signature(reach):
    """What a trace of this call is specialised to; equal signatures replay the same tape:
    (process state, the guard with each tensor's layout, where tensors sharing memory
    start)."""
    starts = ()
    if reach.shared:  # tensors that share memory: where each one starts, relative to the first
        first = {}
        starts = tuple(address(a) - first.setdefault(id(root(a)), address(a))
                       for a in (t._data for t in reach.tensors) if a.__class__ is np.ndarray)
    return (_globals(), tuple(reach.values), starts)


def shape_free(sig, reach):
    """``sig`` without the tensors' sizes: signatures that differ only in sizes (a sequence
    growing by one token per call) are variants of one program."""
    values = list(sig[1])
    for at in reach.layouts:
        p = values[at]
        if p[0] != "cuda":
            values[at] = (len(p[0]),) + p[2:]
    return (sig[0], tuple(values))
