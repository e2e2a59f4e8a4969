"""One hook into numgrad's op entry points, shared by everything that watches ops run (the
profiler, the ONNX exporter's recorder, forward AD under ``no_grad``).

A client is ``Client(factory)``; ``factory(site, fn)`` returns the function to install in
place of ``fn`` at ``site`` (``site.name`` is the op's name, ``site.swapped`` whether the
operands arrive reversed, ``site.original`` numgrad's own function). While at least one
client is active, every entry point below holds the composition of the active clients'
wrappers (the one entered last outermost); when the last one leaves, every original is put
back, so with no client active ops run exactly their own functions: nothing is checked per
call. Clients nest and may leave in any order (the wrappers are rebuilt on each change), and
the originals are restored when the body raises.

The entry points, described once here:
- every registered op function (``ops.registry.REGISTRY``: ``od.fn``, its in-place form, its
  method form), every public ``numgrad.nn.functional`` function and the ``FUNCTIONS`` below,
  wherever numgrad holds them by identity: a ``numgrad.*`` module's globals, ``Tensor``'s
  attributes, the closure cells of those modules' functions and of Tensor's methods (the
  operators' ``__add__`` call ``add`` through one), a layer class's ``staticmethod``, and the
  attributes of ``models`` a client names (``self.activation = F.relu``);
- ``numgrad.<name>`` for each op name and alias, its in-place form ``numgrad.relu_``;
- ``Tensor``'s methods of those names and of ``METHODS``, the operators ``DUNDERS``, the
  properties ``T``, ``mT``, ``data``;
- the recurrent layers' ``forward``.

Threads: the swap is process-wide, but each wrapper hands a call to its client only on the
thread that entered the client; calls from other threads run the plain op (a profiler does
not see another thread's ops, an export does not record them).
"""

import functools
import sys
import threading
import types

# Tensor operators -> (op name, whether the operands arrive swapped)
DUNDERS = {
    "__add__": ("add", False), "__radd__": ("add", True), "__iadd__": ("add_", False),
    "__sub__": ("sub", False), "__rsub__": ("sub", True), "__isub__": ("sub_", False),
    "__mul__": ("mul", False), "__rmul__": ("mul", True), "__imul__": ("mul_", False),
    "__truediv__": ("div", False), "__rtruediv__": ("div", True),
    "__itruediv__": ("div_", False), "__matmul__": ("matmul", False),
    "__rmatmul__": ("matmul", True), "__pow__": ("pow", False), "__rpow__": ("pow", True),
    "__neg__": ("neg", False), "__getitem__": ("getitem", False),
    "__setitem__": ("setitem", False), "__eq__": ("eq", False), "__ne__": ("ne", False),
    "__lt__": ("lt", False), "__le__": ("le", False), "__gt__": ("gt", False),
    "__ge__": ("ge", False), "__invert__": ("bitwise_not", False),
    "__and__": ("bitwise_and", False), "__or__": ("bitwise_or", False),
    "__xor__": ("bitwise_xor", False), "__rand__": ("bitwise_and", True),
    "__ror__": ("bitwise_or", True), "__rxor__": ("bitwise_xor", True),
    "__abs__": ("abs", False), "__pos__": ("positive", False),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__mod__": ("remainder", False), "__rmod__": ("remainder", True),
    "__lshift__": ("bitwise_left_shift", False), "__rlshift__": ("bitwise_left_shift", True),
    "__rshift__": ("bitwise_right_shift", False),
    "__rrshift__": ("bitwise_right_shift", True), "__ipow__": ("pow_", False),
    "__imod__": ("remainder_", False), "__ifloordiv__": ("floor_divide_", False),
    "__iand__": ("bitwise_and_", False), "__ior__": ("bitwise_or_", False),
    "__ixor__": ("bitwise_xor_", False), "__ilshift__": ("bitwise_left_shift_", False),
    "__irshift__": ("bitwise_right_shift_", False),
}
# Tensor methods that are not declared ops
METHODS = ("float", "double", "half", "long", "int", "bool", "contiguous", "clone", "type_as",
           "to", "view", "view_as", "reshape", "masked_fill", "masked_fill_", "softmax",
           "log_softmax", "relu", "relu_", "sigmoid", "tanh", "exp", "sqrt", "mean", "sum",
           "flatten", "unflatten", "expand", "expand_as", "repeat", "chunk", "split",
           "transpose", "permute", "t", "unsqueeze", "squeeze", "matmul", "add", "sub", "mul",
           "div", "pow", "neg", "abs", "log", "rsqrt", "gelu", "narrow", "select", "byte",
           "char", "short", "bfloat16", "type", "cpu", "cuda", "detach", "detach_", "copy_",
           "fill_", "zero_", "exponential_", "normal_", "uniform_", "random_", "resize_",
           "new_tensor")
# numgrad.* functions that are not declared ops
FUNCTIONS = ("detach", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like",
             "randn_like", "randint_like", "tensor", "as_tensor", "asarray")
PROPERTIES = {"T": "T", "mT": "mT", "data": "detach"}
# nn.functional names that are not ops
_NOT_OPS = {"Tensor", "Node", "Size", "LazyKernels", "attach", "edge", "meta_for", "dtype_of",
            "broadcast_shapes"}


class Site:
    """One place an entry point is held: ``owner`` (a dict of globals, a class, an instance
    or a closure cell) and ``attr``; ``kind``: "item", "attr", "cell", "property",
    "staticmethod"; ``own``: whether the attribute is the owner's own (else inherited, and
    deleted again on restore)."""

    __slots__ = ("owner", "attr", "original", "name", "swapped", "kind", "own")

    def __init__(self, owner, attr, original, name, swapped=False, kind="attr", own=True):
        self.owner, self.attr, self.original = owner, attr, original
        self.name, self.swapped, self.kind, self.own = name, swapped, kind, own

    def fn(self):
        """The function to wrap (a property's getter, a staticmethod's function)."""
        o = self.original
        if self.kind == "property":
            return o.fget
        if self.kind == "staticmethod":
            return o.__func__
        return o

    def put(self, fn):
        """Hold ``fn`` here (wrapped back into a property or staticmethod as the original)."""
        o = self.original
        if self.kind == "property":
            fn = property(fn, o.fset, o.fdel, o.__doc__)
        elif self.kind == "staticmethod":
            fn = staticmethod(fn)
        self._set(fn)

    def restore(self):
        if self.kind == "attr" and not self.own:
            delattr(self.owner, self.attr)
        else:
            self._set(self.original)

    def _set(self, value):
        if self.kind == "item":
            self.owner[self.attr] = value
        elif self.kind == "cell":
            self.owner.cell_contents = value
        else:
            setattr(self.owner, self.attr, value)


def _targets():
    """id(function) -> (function, name) for the entry points intercepted wherever held."""
    import numgrad
    from numgrad.nn import functional as F
    from numgrad.ops.registry import REGISTRY
    out = {}

    def add(f, name):
        if isinstance(f, types.FunctionType) and id(f) not in out:
            out[id(f)] = (f, name)

    for od in REGISTRY.values():
        add(od.fn, od.name)
        add(getattr(od, "inplace_fn", None), od.name + "_")
        add(getattr(od, "method", None), od.name)
    for attr in FUNCTIONS:
        add(vars(numgrad).get(attr), attr)
    for attr in dir(F):
        if not attr.startswith("_") and attr not in _NOT_OPS and \
                not attr.endswith("Backward0"):
            add(getattr(F, attr, None), attr)
    return out


def sites(models=()):
    """Every place the entry points are held, each once."""
    import numgrad
    import numgrad.nn as nn
    from numgrad.nn import functional as F
    from numgrad.nn.modules import rnn
    from numgrad.ops.registry import REGISTRY
    from numgrad.tensor import Tensor
    targets = _targets()
    out = []
    done = set()

    def site(owner, attr, original, name, swapped=False, kind="attr", own=True):
        key = (id(owner), attr)
        if key not in done:
            done.add(key)
            out.append(Site(owner, attr, original, name, swapped, kind, own))

    def named(owner, attr, name, swapped=False):
        fn = getattr(owner, attr, None)
        if fn is None or isinstance(fn, type) or not callable(fn):
            return
        if isinstance(owner, types.ModuleType):  # as the globals scan below finds it
            site(vars(owner), attr, fn, name, swapped, "item")
            return
        own = attr in vars(owner)
        site(owner, attr, vars(owner)[attr] if own else fn, name, swapped, "attr", own)

    def held(owner, attr, v, kind):
        hit = targets.get(id(v))
        if hit is not None and hit[0] is v:
            site(owner, attr, v, hit[1], kind=kind)
            return True
        return False

    def cells_of(f):
        for cell in f.__closure__ or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            held(cell, None, v, "cell")

    # the public spellings, named as the exporter reads them
    names = {}
    for od in REGISTRY.values():
        for n in (od.name, *od.aliases):
            names[n] = od.name
    for attr in dir(F):
        if not attr.startswith("_") and attr not in _NOT_OPS and not attr.endswith(
                "Backward0"):
            named(F, attr, attr)
            if attr in vars(numgrad):
                names.setdefault(attr, attr)
    for attr, name in names.items():
        named(numgrad, attr, name)
    for attr in list(vars(numgrad)):
        if attr.endswith("_") and not attr.startswith("_") and attr[:-1] in names:
            named(numgrad, attr, names[attr[:-1]] + "_")
    for attr in FUNCTIONS:
        named(numgrad, attr, attr)
    for attr, name in list(names.items()) + [(m, m) for m in METHODS]:
        if hasattr(Tensor, attr):
            named(Tensor, attr, name)
            if attr + "_" in vars(Tensor) and attr + "_" not in names:
                named(Tensor, attr + "_", name + "_")
    for attr, (name, swapped) in DUNDERS.items():
        named(Tensor, attr, name, swapped)
    for attr, name in PROPERTIES.items():
        site(Tensor, attr, vars(Tensor)[attr], name, kind="property")
    for cls, name in ((rnn.LSTM, "lstm"), (rnn.GRU, "gru"), (rnn.RNN, "rnn"),
                      (rnn.LSTMCell, "lstm_cell"), (rnn.GRUCell, "gru_cell"),
                      (rnn.RNNCell, "rnn_cell")):
        named(cls, "forward", name)
    # the same functions held elsewhere, by identity
    for k, v in list(vars(Tensor).items()):
        if not isinstance(v, types.FunctionType):
            continue
        hit = targets.get(id(v))
        if hit is not None and hit[0] is v:
            site(Tensor, k, v, k if k.endswith("_") else hit[1])
        elif k.endswith("_") and not k.startswith("__") and k[:-1] in REGISTRY:
            site(Tensor, k, v, k)  # a generated in-place method
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == "numgrad" or mod_name.startswith("numgrad.")):
            continue
        d = getattr(mod, "__dict__", None)
        if d is None or mod_name == __name__:
            continue
        for k, v in list(d.items()):
            if not held(d, k, v, "item") and isinstance(v, types.FunctionType):
                cells_of(v)
    for v in list(vars(Tensor).values()):
        if isinstance(v, types.FunctionType):
            cells_of(v)
    for cls in vars(nn).values():
        if isinstance(cls, type) and issubclass(cls, nn.Module):
            for attr, v in list(vars(cls).items()):
                if isinstance(v, staticmethod):
                    hit = targets.get(id(v.__func__))
                    if hit is not None and hit[0] is v.__func__:
                        site(cls, attr, v, hit[1], kind="staticmethod")
    for model in models:
        for m in model.modules():
            for attr, v in list(vars(m).items()):
                held(m, attr, v, "attr")
    return out


class Client:
    """``with Client(factory, models=()):`` wraps the entry points while inside (also
    ``enter()``/``leave()``). Calls from other threads than the entering one skip it."""

    def __init__(self, factory, models=()):
        self.factory = factory
        self.models = tuple(models)
        self.thread = None

    def enter(self):
        if self in _CLIENTS:
            raise RuntimeError("this interception is already active")
        self.thread = threading.get_ident()
        _CLIENTS.append(self)
        try:
            _rebuild()
        except BaseException:
            _CLIENTS.remove(self)
            _rebuild()
            raise
        return self

    def leave(self):
        if self in _CLIENTS:
            _CLIENTS.remove(self)
            _rebuild()

    def __enter__(self):
        return self.enter()

    def __exit__(self, *exc):
        self.leave()
        return False

    def wrap(self, site, fn):
        w = self.factory(site, fn)
        if w is fn:
            return fn
        owner = self.thread
        get_ident = threading.get_ident

        @functools.wraps(w)
        def on_owner_thread(*args, **kwargs):
            if get_ident() == owner:
                return w(*args, **kwargs)
            return fn(*args, **kwargs)
        return on_owner_thread


_CLIENTS = []  # the active clients, in the order entered
_INSTALLED = []  # the sites holding wrappers now


def active():
    """Whether any client is active (the entry points hold wrappers)."""
    return bool(_CLIENTS)


def _uninstall():
    while _INSTALLED:
        _INSTALLED.pop().restore()
    # a numgrad module first imported meanwhile took wrappers into its globals
    for mod_name, mod in list(sys.modules.items()):
        if mod is not None and (mod_name == "numgrad" or mod_name.startswith("numgrad.")):
            d = getattr(mod, "__dict__", None) or {}
            for k, v in list(d.items()):
                if isinstance(v, types.FunctionType):
                    original = getattr(v, "__intercepted__", None)
                    if original is not None:
                        d[k] = original


def _rebuild():
    """Put the originals back, then, if clients remain, their composed wrappers."""
    _uninstall()
    if not _CLIENTS:
        return
    models = [m for c in _CLIENTS for m in c.models]
    made = {}  # one wrapper per (function, name, operand order)
    try:
        for s in sites(models):
            fn = s.fn()
            key = (id(fn), s.name, s.swapped)
            w = made.get(key)
            if w is None:
                w = fn
                for c in _CLIENTS:
                    w = c.wrap(s, w)
                if w is not fn:
                    w.__intercepted__ = fn
                made[key] = w
            if w is not fn:
                s.put(w)
                _INSTALLED.append(s)
    except BaseException:
        _uninstall()
        raise

