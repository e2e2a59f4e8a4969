"""PyTorch's argument spellings and messages for functions numgrad writes in Python: its
"invalid combination of arguments" listing, its missing/extra argument wording, int and bool
argument checks, and the ``size`` argument of the factories (``zeros(2, 3)``,
``zeros((2, 3))``, ``zeros(size=(2, 3))``) and ``randint``'s overloads."""

import numpy as np

from numgrad import _dtype
from numgrad._shape import parse_shape
from numgrad.random import Generator
from numgrad.tensor import Tensor

FACTORY = ("Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
           "torch.device device = None, bool pin_memory = False, bool requires_grad = False")
_WITH_GEN = "*, torch.Generator generator, "
RANDOM_SIGNATURES = (f"(tuple of ints size, {_WITH_GEN}{FACTORY})",
                     f"(tuple of ints size, *, {FACTORY})")
RANDINT_SIGNATURES = tuple(f"({a}tuple of ints size, {k}{FACTORY})"
                           for a in ("int high, ", "int low, int high, ")
                           for k in (_WITH_GEN, "*, "))
# C++ names in randint's bound messages
_CPP = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short",
        "int32": "int", "int64": "long"}
NOT_GIVEN = object()


def type_name(v):
    """How PyTorch's argument parser names the type of ``v``."""
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, _dtype.dtype):
        return "torch.dtype"
    if isinstance(v, Generator):
        return "torch.Generator"
    return type(v).__name__


def invalid_combination(fname, args, kwargs, signatures):
    """PyTorch's TypeError for arguments that match none of ``fname``'s overloads."""
    got = ", ".join(type_name(a) for a in args)
    kws = [f"{k}={type_name(v)}" for k, v in reversed(kwargs.items())]
    if kws:
        got = got + ", " + ", ".join(kws) if args else "".join(k + ", " for k in kws)
    listing = "".join(f" * {s}\n" for s in signatures)
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{listing}")


def missing(fname, names):
    # PyTorch's wording, plural and singular as it prints them
    s = "s" if len(names) == 1 else ""
    quoted = ", ".join(f'"{n}"' for n in names)
    return TypeError(f"{fname}() missing {len(names)} required positional argument{s}: {quoted}")


def bind(fname, args, kwargs, names, required, keywords=()):
    """``{name: value}`` for a call of ``fname(*names, *, *keywords)`` with PyTorch's
    messages, and ``{name: position}`` for the arguments given by position."""
    if len(args) > len(names):
        raise TypeError(f"{fname}() takes from {required} to {len(names)} positional "
                        f"arguments but {len(args)} were given")
    values = dict(zip(names, args))
    positions = {n: i + 1 for i, n in enumerate(names[:len(args)])}
    for k, v in kwargs.items():
        if k in values:
            raise TypeError(f"{fname}() got multiple values for argument '{k}'")
        if k not in names and k not in keywords:
            raise TypeError(f"{fname}() got an unexpected keyword argument '{k}'")
        values[k] = v
    lacking = [n for n in names[:required] if n not in values]
    if lacking:
        raise missing(fname, lacking)
    return values, positions


def _where(name, positions):
    at = positions.get(name)
    return f"argument '{name}'" + (f" (position {at})" if at else "")


def int_arg(fname, name, v, positions):
    """An int argument (Python/NumPy int or a one-element integer tensor)."""
    if isinstance(v, Tensor) and v._data.size == 1 and v._data.dtype.kind in "iu":
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fname}(): {_where(name, positions)} must be int, not "
                        f"{type_name(v)}")
    if not -2**63 <= int(v) < 2**63:
        raise ValueError("Overflow when unpacking long long")
    return int(v)


def bool_arg(fname, name, v, positions):
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{fname}(): {_where(name, positions)} must be bool, not "
                        f"{type_name(v)}")
    return bool(v)


def factory_size(fname, dims, size, random=False):
    """The shape of ``fname(*dims)`` or ``fname(size=size)`` (``size``: NOT_GIVEN when not
    given), with PyTorch's messages; ``random``: rand/randn, whose parser lists overloads."""
    def invalid():
        kw = {} if size is NOT_GIVEN else {"size": size}
        return invalid_combination(fname, dims, kw, RANDOM_SIGNATURES)
    if size is NOT_GIVEN:
        if not dims:
            raise invalid() if random else missing(fname, ["size"])
        if len(dims) > 1 and any(isinstance(d, (tuple, list)) for d in dims):
            if random:
                raise invalid()
            raise TypeError(f"{fname}() takes 1 positional argument but {len(dims)} were given")
        if len(dims) == 1 and not isinstance(dims[0], (tuple, list)) \
                and not hasattr(dims[0], "__index__"):
            raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, "
                            f"not {type_name(dims[0])}")
        return parse_shape(dims)
    if dims:
        if random:
            raise invalid()
        raise TypeError(f"{fname}() got multiple values for argument 'size'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{fname}(): argument 'size' must be tuple of ints, not "
                        f"{type_name(size)}")
    return parse_shape((size,))


def randint_args(args, kwargs):
    """``(low, high, size)`` of ``randint(high, size)`` / ``randint(low, high, size)`` (also
    by keyword), with PyTorch's messages. ``kwargs`` holds every keyword given."""
    def invalid():
        return invalid_combination("randint", args, kwargs, RANDINT_SIGNATURES)
    named = {k: v for k, v in kwargs.items() if k in ("low", "high", "size")}
    g = kwargs.get("generator")
    if len(args) > 3 or set(kwargs) - set(named) - {"generator", "dtype", "device",
                                                     "requires_grad", "out", "layout",
                                                     "pin_memory"}:
        raise invalid()
    if g is not None and not isinstance(g, Generator):
        raise invalid()
    three = len(args) == 3 or "low" in named or (
        len(args) == 2 and "size" in named and not isinstance(args[1], (tuple, list)))
    names = ("low", "high", "size") if three else ("high", "size")
    values = dict(zip(names, args))
    if set(values) & set(named):
        raise invalid()
    values.update(named)
    positions = {n: i + 1 for i, n in enumerate(names[:len(args)])}
    if len(args) == 2 and not named and not isinstance(args[1], (tuple, list)):
        raise TypeError("randint(): argument 'size' (position 2) must be tuple of ints, "
                        f"not {type_name(args[1])}")
    if "low" in named and "high" not in values:
        raise missing("randint", ["high", "size"])
    if "size" not in values:
        raise invalid()
    size = values["size"]
    if "high" not in values or not isinstance(size, (tuple, list)):
        raise invalid()
    for i, s in enumerate(size):
        if not hasattr(s, "__index__"):
            at = positions.get("size")
            where = f" (position {at})" if at else ""
            raise TypeError(f"randint(): argument 'size'{where} must be tuple of ints, but "
                            f"found element of type {type_name(s)} at pos {i}")
    low = int_arg("randint", "low", values.get("low", 0), positions)
    high = int_arg("randint", "high", values["high"], positions)
    return low, high, parse_shape((size,))


def check_int_bounds(low, high, d):
    """PyTorch's check that [low, high) fits integer dtype ``d`` (when low < high)."""
    name = _CPP.get(d.np.name if d.np is not np.bool_ else "bool")
    if name is None or low >= high:
        return
    info = (0, 1) if name == "bool" else (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max))
    if not info[0] <= low <= info[1]:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not info[0] <= high - 1 <= info[1]:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")
