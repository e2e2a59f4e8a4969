"""A verified plan's guard as generated Python: the walk of ``state.reachable`` specialised to
the objects one call reached.

``reachable`` walks everything a call can reach and writes down its signature; on a model of
a few hundred objects that costs a few hundred microseconds per call, most of it deciding
again, object by object, what kind of thing each one is. Once a plan is verified, its
signature's objects are known: ``build`` walks them once more, in the same order and by the
same rules, and writes straight-line code that checks, for the current call, each object
reached along the same path (a closure cell, a dict key, an attribute): the same class, the
same object where the walk compares identity, the same values, lengths and keys, each
tensor's layout, and no object reached twice where the walk saw it once (or the reverse).
The function returns the tensors in the walk's order (what the plan replays on), or None
when anything differs, or anything raises; the call then takes the full walk, which decides.
A hit is thus a call the full walk would give the plan's signature: the generated guard is
only ever as strict as the walk or stricter.
"""

import types

import numpy as np

from numgrad._compile import state as S
from numgrad._compile.state import _KINDS, _MISSING, _PLAIN_KINDS, _kind, _value


class _Writer:
    """The source of one guard, written while walking the objects of one call."""

    def __init__(self):
        self.lines = []
        self.consts = []
        self._const_at = {}
        self.n = 0
        self.seen = {}  # id -> the variable holding the object (the walk's ``_seen``)

    def const(self, v):
        # each constant is a global of the generated function (a cached global load is
        # cheaper than a subscript of one tuple of them: about 10% of a model's guard)
        key = id(v)
        at = self._const_at.get(key)
        if at is None or self.consts[at] is not v:
            at = self._const_at[key] = len(self.consts)
            self.consts.append(v)
        return f"K_{at}"

    def var(self, expr):
        self.n += 1
        name = f"v{self.n}"
        self.lines.append(f"    {name} = {expr}")
        return name

    def fail(self, cond):
        self.lines.append(f"    if {cond}: return None")

    def new(self, v, obj):
        """``obj`` is seen for the first time: nothing reached before may be it now (checked
        once at the end: the set of their ids must have one member per new object)."""
        self.lines.append(f"    SEEN.add(id({v}))")
        self.seen[id(obj)] = v

    # the walk ---------------------------------------------------------------------------
    def visit(self, expr, obj):
        v = self.var(expr)
        cls = obj.__class__
        kind = _KINDS.get(cls) or _kind(cls)
        c = self.const(cls)
        if kind == "value":
            self.fail(f"{v}.__class__ is not {c} or {v} != {self.const(obj)}")
            return
        if kind in _PLAIN_KINDS:
            self.fail(f"{v}.__class__ is not {c} or VALUE({v}, {kind!r}) != "
                      f"{self.const(_value(obj, kind))}")
            return
        if kind == "library":
            self.fail(f"{v} is not {self.const(obj)}")
            return
        if kind == "function":
            self.function(v, obj)
            return
        if (kind == "seq" or kind == "map") and not obj:
            self.fail(f"{v}.__class__ is not {c} or {v}")
            return
        at = self.seen.get(id(obj))
        if at is not None:
            self.fail(f"{v} is not {at}")
            return
        self.fail(f"{v}.__class__ is not {c}")
        self.new(v, obj)
        if kind == "tensor":
            self.tensor(v, obj)
        elif kind in ("module", "object", "optimizer"):
            self.attrs(v, obj)
        elif kind == "seq":
            self.fail(f"len({v}) != {len(obj)}")
            for i, x in enumerate(obj):
                self.visit(f"{v}[{i}]", x)
        elif kind == "map":
            keys = tuple(obj)
            if all(_KINDS.get(k.__class__) == "value" for k in keys):
                self.fail(f"tuple({v}) != {self.const(keys)}")
                for k in keys:
                    self.visit(f"{v}[{self.const(k)}]", obj[k])
            else:
                ks = self.var(f"tuple({v})")
                self.fail(f"len({ks}) != {len(keys)}")
                for i, k in enumerate(keys):
                    self.visit(f"{ks}[{i}]", k)
                vs = self.var(f"tuple({v}.values())")
                for i, x in enumerate(obj.values()):
                    self.visit(f"{vs}[{i}]", x)
        elif kind == "set":
            if obj:
                self.fail(f"SETVALUE({v}) != {self.const(_set_value(obj))}")
            else:  # its class is checked: empty is its whole value (a module's buffer set)
                self.fail(v)
        elif kind == "method":
            self.visit(f"{v}.__self__", obj.__self__)
            self.visit(f"{v}.__func__", obj.__func__)
        elif kind == "partial":
            self.visit(f"{v}.func", obj.func)
            self.visit(f"{v}.args", obj.args)
            self.visit(f"{v}.keywords", obj.keywords)
        else:  # "callable"
            for f in S._class_parts(cls)[1]:
                self.function(self.const(f), f)

    def tensor(self, v, t):
        self.lines.append(f"    T.append({v})")
        lay = S.layout(t, self.roots)
        if t._data.__class__ is np.ndarray:
            self.layout(v, lay)
        elif self.sizeless:  # the sizes are collected, not compared (``dynamic.Family``)
            self.fail(f"SIZELESS({v}, ROOTS, SIZES) != {self.const(_sizeless(lay))}")
        else:
            self.fail(f"LAYOUT({v}, ROOTS) != {self.const(lay)}")
        g = t._grad
        if g is not None:
            self.visit(f"{v}._grad", g)

    def layout(self, v, lay):
        """``state.layout``'s comparison for a tensor whose data is a NumPy array, written
        out (a call and two tuples per tensor were a third of a model's guard): the same
        items compared, the same numbering of the memory the tensors view (``ROOTS``); in a
        ``sizeless`` guard, shape and strides appended to ``SIZES`` as ``_layout_sizes``
        does, only the rank compared."""
        shape, strides, dtype, requires_grad, no_grad, no_fn, n, no_hooks = lay
        d = self.var(f"{v}._data")
        self.fail(f"{d}.__class__ is not NDARRAY")
        r = self.var(f"id({d}) if {d}.base is None else id(ROOT({d}))")
        self.fail(f"ROOTS.setdefault({r}, len(ROOTS)) != {n}")
        s = self.var(f"{d}.shape")
        if self.sizeless:
            self.fail(f"len({s}) != {len(shape)}")
            st = self.var(f"{d}.strides")
            # a size-1 (or empty) dim's stride is never used: 0 in the signature
            self.lines.append(f"    if 1 in {s} or 0 in {s}: {st} = MASKED({s}, {st})")
            self.lines.append(f"    SIZES += {s}")
            self.lines.append(f"    SIZES += {st}")
        else:
            self.fail(f"{s} != {self.const(shape)}")
            used = [i for i, k in enumerate(shape) if k >= 2]
            if len(used) == len(shape):
                self.fail(f"{d}.strides != {self.const(strides)}")
            elif used:
                st = self.var(f"{d}.strides")
                self.fail(" or ".join(f"{st}[{i}] != {strides[i]}" for i in used))
        # bools from ``layout``'s own ``is None`` tests and the flag (a bool) by identity: a
        # flag of another class fails here and goes to the full walk
        checks = [f"{d}.dtype != {self.const(dtype)}",
                  f"{v}._requires_grad is not {self.const(requires_grad)}",
                  f"{v}._grad is {'not ' if no_grad else ''}None",
                  f"{v}._grad_fn is {'not ' if no_fn else ''}None"]
        if no_hooks:
            checks.append(f"{v}._hooks is not None or {v}._post_acc_hooks is not None")
        else:
            checks.append(f"{v}._hooks is None and {v}._post_acc_hooks is None")
        self.fail(" or ".join(checks))

    def attrs(self, v, obj):
        cls = obj.__class__
        d = getattr(obj, "__dict__", None)
        if d is None:
            slots = S._slots(cls)
            d = {k: getattr(obj, k, _MISSING) for k in slots}
            dv = self.var(f"SLOTS({v}, {self.const(slots)})")
        else:
            dv = self.var(f"{v}.__dict__")
        self.fail(f"tuple({dv}) != {self.const(tuple(d))}")
        for k, x in d.items():
            self.visit(f"{dv}[{self.const(k)}]", x)
        names, functions = S._class_parts(cls)
        c = self.const(cls)
        for k in names:
            if k not in d:
                self.visit(f"getattr({c}, {self.const(k)}, None)", getattr(cls, k, None))
        for f in functions:
            self.function(self.const(f), f)

    def function(self, v, fn):
        at = self.seen.get(id(fn))
        if at is not None:
            self.fail(f"{v} is not {at}")
            return
        self.new(v, fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            self.fail(f"{v} is not {self.const(fn)}")
            return
        self.fail(f"{v}.__code__ is not {self.const(code)}")
        info = S._CODES.get(id(code))
        if info is None or info[0] is not code:
            info = S._CODES[id(code)] = (code, S._library(fn.__module__),
                                         S._global_names(code))
        if info[1]:
            return
        defaults = fn.__defaults__ or ()
        self.fail(f"len({v}.__defaults__ or ()) != {len(defaults)}")
        for i, x in enumerate(defaults):
            self.visit(f"{v}.__defaults__[{i}]", x)
        if fn.__kwdefaults__:
            self.visit(f"{v}.__kwdefaults__", fn.__kwdefaults__)
        else:
            self.fail(f"{v}.__kwdefaults__")
        for i, cell in enumerate(fn.__closure__ or ()):
            self.visit(f"{v}.__closure__[{i}].cell_contents", cell.cell_contents)
        names = info[2]
        if not names:
            return
        g = self.var(f"{v}.__globals__")
        later = []
        for name in names:
            x = fn.__globals__.get(name, _MISSING)
            expr = f"{g}.get({self.const(name)}, MISSING)"
            cls = x.__class__
            if cls is types.ModuleType:
                m = self.var(expr)
                self.fail(f"{m} is not {self.const(x)}")
                if S._user_module(x):
                    for a in code.co_names:
                        w = getattr(x, a, _MISSING)
                        wv = self.var(f"getattr({m}, {self.const(a)}, MISSING)")
                        if w is _MISSING or w.__class__ is types.ModuleType:
                            self.fail(f"{wv} is not MISSING and {wv}.__class__ is not MODULE")
                        else:
                            self.visit(wv, w)
            elif cls is type:
                t = self.var(expr)
                self.fail(f"{t} is not {self.const(x)}")
                if S._user_class(x, objects=False):
                    d = vars(x)
                    for a in code.co_names:
                        w = d.get(a, _MISSING)
                        wv = self.var(f"vars({t}).get({self.const(a)}, MISSING)")
                        if w is not _MISSING and _kind(w.__class__) in S._CLASS_KINDS:
                            self.visit(wv, w)
                        else:
                            self.fail(f"{wv} is not MISSING and KIND({wv}.__class__) in "
                                      f"CLASS_KINDS")
            elif x is _MISSING:
                self.fail(f"{expr} is not MISSING")
            else:
                later.append((expr, x))
        for expr, x in later:
            self.visit(expr, x)


def _set_value(obj):
    return (obj.__class__, frozenset(v for v in obj if _kind(v.__class__) == "value"),
            len(obj))


def _slots_dict(obj, names):
    return {k: getattr(obj, k, _MISSING) for k in names}


def build(args, kwargs, fn, sig, sizeless=False):
    """The guard of signature ``sig``, written from the objects of a call that had it:
    ``guard(args, kwargs, fn)`` returns the tensors the walk would find, in its order, when
    the call's signature is ``sig``, else None. ``sizeless``: the guard of every signature
    of ``sig``'s program (``state.shape_free``): it returns (tensors, their sizes as
    ``dynamic.sizes_of`` writes them) when the call's signature is one of them."""
    w = _Writer()
    w.roots = {}
    w.sizeless = sizeless
    w.lines += ["def guard(args, kwargs, fn):",
                "    T = []",
                "    ROOTS = {}",
                "    SIZES = []",
                "    SEEN = set()"]
    w.visit("args", args)
    if kwargs:
        w.visit("kwargs", kwargs)
    else:
        w.fail("kwargs")
    w.visit("fn", fn)
    w.fail(f"len(SEEN) != {len(w.seen)}")
    w.fail(f"GLOBALS() != {w.const(sig[0])}")
    if sizeless:
        if sig[2]:
            w.lines.append("    SIZES.extend(STARTS(T))")
        w.lines.append("    return T, tuple(SIZES)")
    else:
        if sig[2]:  # tensors sharing memory: where each starts
            w.fail(f"STARTS(T) != {w.const(sig[2])}")
        w.lines.append("    return T")
    src = "\n".join(w.lines) + "\n"
    names = {f"K_{i}": c for i, c in enumerate(w.consts)}
    names.update({"MISSING": _MISSING, "MODULE": types.ModuleType,
             "VALUE": _value, "LAYOUT": S.layout, "SETVALUE": _set_value,
             "SLOTS": _slots_dict, "KIND": _kind, "CLASS_KINDS": S._CLASS_KINDS,
             "GLOBALS": S._globals, "STARTS": _starts, "SIZELESS": _layout_sizes,
             "NDARRAY": np.ndarray, "ROOT": S.root, "MASKED": _masked})
    exec(compile(src, "<numgrad.compile guard>", "exec"), names)  # our generated source
    inner = names["guard"]

    def guard(args, kwargs, fn):
        try:
            return inner(args, kwargs, fn)
        except Exception:  # anything unexpected (an empty cell, a missing key): the full walk
            return None
    guard.source = src
    return guard


def _sizeless(lay):
    """A layout without its shape and strides (its rank instead), as ``state.shape_free``."""
    return lay if lay[0] == "cuda" else (len(lay[0]),) + lay[2:]


def _layout_sizes(t, roots, sizes):
    """``t``'s layout without its sizes; its shape and strides appended to ``sizes``."""
    lay = S.layout(t, roots)
    if lay[0] == "cuda":
        return lay
    sizes.extend(lay[0])
    sizes.extend(lay[1])
    return (len(lay[0]),) + lay[2:]


def _masked(shape, strides):
    """``strides`` with the strides of size-1 and empty dims as 0 (as ``state.layout``)."""
    return tuple(0 if n < 2 else s for n, s in zip(shape, strides))


def _starts(tensors):
    first = {}
    return tuple(S.address(a) - first.setdefault(id(S.root(a)), S.address(a))
                 for a in (t._data for t in tensors) if a.__class__ is np.ndarray)
