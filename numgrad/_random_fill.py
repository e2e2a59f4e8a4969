"""The draws of the in-place random fills ``uniform_``, ``normal_`` and ``random_``, as
PyTorch's CPU kernels make them: argument and dtype checks with PyTorch's messages, and the
draws laid out in the order PyTorch's serial kernels visit the tensor's memory (a transposed
tensor is filled along its memory, not along its rows).

Each function returns a host array of the tensor's shape (in a dtype NumPy can cast into the
tensor's) that the caller copies into it, or the tensor's own array where ``uniform`` and
``normal`` drew into it directly (``Generator.fill``).
"""

import warnings

import numpy as np

from numgrad._spellings import invalid_combination

_INT64 = (-(1 << 63), (1 << 63) - 1)
# the C++ names PyTorch's random_ messages give dtypes, and each dtype's range of whole numbers
# (``digits``: the float's mantissa bits, whole numbers up to 2**digits are exact)
_C_NAME = {"Byte": "unsigned char", "Char": "signed char", "Short": "short int", "Int": "int",
           "Long": "long int", "Bool": "bool", "Half": "c10::Half",
           "BFloat16": "c10::BFloat16", "Float": "float", "Double": "double"}
_INT_RANGE = {"Byte": (0, 255), "Char": (-128, 127), "Short": (-(1 << 15), (1 << 15) - 1),
              "Int": (-(1 << 31), (1 << 31) - 1), "Long": _INT64, "Bool": (0, 1)}
_DIGITS = {"Half": 11, "BFloat16": 8, "Float": 24, "Double": 53}
_FLOAT_MAX = {"Half": 65504.0, "BFloat16": 3.3895313892515355e38,
              "Float": 3.4028234663852886e38, "Double": 1.7976931348623157e308}
_RANDOM_SIGNATURES = ("(*, torch.Generator generator = None)",
                      "(int from, int to, *, torch.Generator generator = None)",
                      "(int to, *, torch.Generator generator = None)")


def visit_order(a):
    """The order in which PyTorch's serial kernel writing ``a`` visits its elements (its
    memory order for a permuted tensor)."""
    from numgrad.ops.sampling import stride_order
    return stride_order(a) if a.__class__ is np.ndarray else list(range(a.ndim))


def _laid_out(flat, a):
    from numgrad.ops.sampling import laid_out
    return laid_out(flat, a.shape, visit_order(a))


def uniform(g, a, dt, low, high):
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for '{dt._legacy}'")
    if g.fill(a, "uniform", low, high):
        return a  # drawn in place
    return _laid_out(g.uniform(a.size, a.dtype, low, high), a)


def normal(g, a, dt, mean, std):
    """PyTorch draws 16 at a time into a contiguous tensor of at least 16 elements, and one
    Box-Muller pair at a time (keeping the second value) otherwise."""
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{dt._legacy}'")
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if g.fill(a, "normal", mean, std):
        return a  # drawn in place
    if a.__class__ is not np.ndarray or a.flags.c_contiguous:
        return g.normal(a.shape, a.dtype, mean, std)
    return _laid_out(g.normal_serial(a.size, a.dtype, mean, std), a)


def _int_arg(v, args, kwargs):
    if isinstance(v, (bool, float)) or not isinstance(v, (int, np.integer)):
        raise invalid_combination("random_", args, kwargs, _RANDOM_SIGNATURES)
    v = int(v)
    if not _INT64[0] <= v <= _INT64[1]:
        raise ValueError("Overflow when unpacking long long")
    return v


def _float_from(v, dt):
    """PyTorch's ``update_from``: the least whole number ``>= v`` (about) that the dtype can
    hold, so ``from`` is never rounded below itself."""
    rounded = _cast(v + 1, dt)
    if rounded is not None and rounded < v:
        n = abs(v + 1).bit_length() - 1
        v = rounded + (1 << (n - _DIGITS[dt._legacy] + 1))
    return v


def _float_to(v, dt):
    """PyTorch's ``update_to``: ``to`` lowered so that ``to - 1`` is not rounded up to it."""
    rounded = _cast(v - 1, dt)
    if rounded is not None and rounded >= v:
        n = abs(v - 1).bit_length() - 1
        v = rounded - (1 << (n - _DIGITS[dt._legacy] + 1))
    return v


def _cast(v, dt):
    """``int(dtype(v))`` (None when the dtype rounds ``v`` to infinity)."""
    if dt._legacy == "BFloat16":
        f = float(np.float32(v))  # bfloat16: float32 with 8 significant bits, to nearest even
        bits = int(np.array(f, np.float32).view(np.uint32))
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        f = float(np.array(bits, np.uint32).view(np.float32))
    else:
        with np.errstate(over="ignore"):
            f = float(np.dtype(dt.np).type(v))
    return None if f in (float("inf"), float("-inf")) else int(f)


def _check_range(low, high_inc, dt):
    """PyTorch's ``check_from_to_in_range``: both ends inside the dtype, with a warning where
    a float cannot tell neighbouring whole numbers apart."""
    name = _C_NAME[dt._legacy]
    if dt.is_floating_point:
        top = _FLOAT_MAX[dt._legacy]
        for v, what in ((low, "from"), (high_inc, "to - 1")):
            if not -top <= v <= top:
                raise RuntimeError(f"{what} is out of bounds for {name}")
        digits = _DIGITS[dt._legacy]
        for v, what in ((low, "from"), (high_inc, "to - 1")):
            if not -(1 << digits) <= v <= 1 << digits:
                warnings.warn(
                    f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision "
                    f"limitations {name} can support discrete uniform distribution only within "
                    "this range. This warning will become an error in version 1.7 release, "
                    "please fix the code in advance", UserWarning, stacklevel=4)
        return
    lo, hi = _INT_RANGE[dt._legacy]
    for v, what in ((low, "from"), (high_inc, "to - 1")):
        if not lo <= v <= hi:
            raise RuntimeError(f"{what} is out of bounds for {name}")


def random(g, a, dt, args, kwargs):
    """``random_()``, ``random_(to)``, ``random_(from, to)`` (``to=None``: up to the largest
    whole number of the dtype): whole numbers ``from + r % (to - from)`` of one 32-bit draw,
    or of a 64-bit one where the range needs it, as PyTorch draws them."""
    if len(args) > 2:
        raise TypeError(f"random_() takes 2 positional arguments but {len(args)} were given")
    given = dict(zip(("from", "to") if len(args) == 2 else ("to",), args))
    for k, v in kwargs.items():
        if k not in ("from", "to") or k in given:
            raise invalid_combination("random_", args, kwargs, _RANDOM_SIGNATURES)
        given[k] = v
    if not given:
        if dt._legacy not in _C_NAME:
            raise NotImplementedError(f"\"random_\" not implemented for '{dt._legacy}'")
        # r % (largest whole number + 1), r of 64 bits for int64 and float64, else 32
        if dt._legacy == "Bool":
            span = 2
        elif dt.is_floating_point:
            span = (1 << _DIGITS[dt._legacy]) + 1
        else:
            span = _INT_RANGE[dt._legacy][1] + 1
        wide = dt._legacy in ("Long", "Double")
        return _laid_out(g.randint(0, span, a.size, np.int64, wide), a)
    if "to" not in given and "from" in given:
        raise invalid_combination("random_", args, kwargs, _RANDOM_SIGNATURES)
    low = _int_arg(given.get("from", 0), args, kwargs)
    high = given["to"]
    if high is not None:
        high = _int_arg(high, args, kwargs)
        if not low < high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={low} >= to={high}")
        if dt.is_floating_point:
            low, high = _float_from(low, dt), _float_to(high, dt)
            if not low < high:
                raise RuntimeError(
                    f"random_ expects 'from' casted to dtype to be less than 'to' casted to "
                    f"dtype, but got from={low} >= to={high}")
        _check_range(low, high - 1, dt)
        return _laid_out(g.randint(low, high, a.size, np.int64), a)
    if low == _INT64[0]:  # the whole 64-bit range
        if dt._legacy in ("Bool", "Half"):
            raise NotImplementedError("\"random_full_64_bits_range_kernel_cpu\" not implemented "
                                      f"for '{dt._legacy}'")
        if dt._legacy not in ("Long", "Double", "Float", "BFloat16"):
            raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, "
                               "double, float and bfloat16")
        return _laid_out(g.randint(0, 1 << 64, a.size, np.int64), a)  # 64 bits as int64
    if dt.is_floating_point:
        top = 1 << _DIGITS[dt._legacy]
        low = _float_from(low, dt)
        if not low < top:
            raise RuntimeError(
                f"random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                f"casted to dtype, but got from={low} > to_inc={top}")
    else:
        top = _INT_RANGE[dt._legacy][1]
    _check_range(low, top, dt)
    return _laid_out(g.randint(low, top + 1, a.size, np.int64), a)
