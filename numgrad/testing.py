"""``numgrad.testing``: ``assert_close`` with PyTorch's default tolerances, its checks
(shape, device, dtype, stride), its recursion into sequences and mappings, and its messages
("Tensor-likes are not close!", mismatched elements, greatest differences and where)."""

import collections.abc
import math

import numpy as np

from numgrad import _dtype
from numgrad.autograd.grad_mode import no_grad
from numgrad.ops import compare
from numgrad.tensor import Tensor

__all__ = ["assert_close"]

# (rtol, atol) by dtype name; other dtypes (integers, bool) compare exactly
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
               "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


class _Mismatch(Exception):
    """A failed comparison: the exception class and message to raise, and where."""

    def __init__(self, cls, message):
        super().__init__(message)
        self.cls = cls
        self.message = message
        self.path = []


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless ``actual`` and ``expected`` are close (tensors, NumPy
    arrays, Python numbers, or sequences and mappings of them), as ``torch.testing``."""
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    options = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan,
               "check_device": check_device, "check_dtype": check_dtype,
               "check_stride": check_stride}
    try:
        _compare(actual, expected, options)
    except _Mismatch as m:
        message = m.message
        if m.path:
            message += "\n\nThe failure occurred for item " + "".join(
                f"[{k!r}]" for k in m.path)
        if msg is not None:
            message = msg(message) if callable(msg) else msg
        raise m.cls(message) from None


def _compare(actual, expected, options):
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        return _compare_tensors(actual, expected, options)
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        from numgrad._factories import as_tensor
        return _compare_tensors(as_tensor(actual), as_tensor(expected), options)
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, options)
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, "The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _at(i, a, e, options)
        return None
    if isinstance(actual, collections.abc.Mapping) and isinstance(
            expected, collections.abc.Mapping):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if missing or extra:
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(missing)}\n"
                            f"Additional keys in the actual mapping: {sorted(extra)}")
        for k in expected:
            _at(k, actual[k], expected[k], options)
        return None
    if actual is None and expected is None:
        return None
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                    f"{type(expected)}.")


def _at(key, actual, expected, options):
    try:
        _compare(actual, expected, options)
    except _Mismatch as m:
        m.path.insert(0, key)
        raise


def _is_number(v):
    return isinstance(v, (bool, int, float, np.number, np.bool_))


def _is_sequence(v):
    return isinstance(v, collections.abc.Sequence) and not isinstance(v, (str, bytes))


def _tolerances(options, dtype_name):
    if options["rtol"] is not None:
        return float(options["rtol"]), float(options["atol"])
    return _TOLERANCES.get(dtype_name, (0.0, 0.0))


# --------------------------------------------------------------------------- Python numbers


def _compare_numbers(actual, expected, options):
    if isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}")
        return
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(AssertionError,
                        f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    floating = isinstance(actual, float) or isinstance(expected, float)
    rtol, atol = _tolerances(options, "float64" if floating else "int64")
    if actual == expected or (options["equal_nan"] and actual != actual
                              and expected != expected):
        return
    diff = abs(actual - expected)
    if diff <= atol + rtol * abs(expected):  # False for nan and inf differences
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol))


def _relative(diff, expected):
    if expected == 0:
        return math.inf if diff != 0 else math.nan
    return diff / abs(expected)


def _scalar_message(actual, expected, rtol, atol):
    diff = abs(actual - expected)
    exact = rtol == 0 and atol == 0
    head = f"Scalars are not {'equal' if exact else 'close'}!"
    abs_line = f"Absolute difference: {diff}" + ("" if exact else f" (up to {atol} allowed)")
    rel_line = f"Relative difference: {_relative(diff, expected)}" + (
        "" if exact else f" (up to {rtol} allowed)")
    return f"{head}\n\nExpected {expected} but got {actual}.\n{abs_line}\n{rel_line}"


# --------------------------------------------------------------------------- tensors


def _attribute(name, a, b):
    if a != b:
        raise _Mismatch(AssertionError,
                        f"The values for attribute '{name}' do not match: {a} != {b}.")


def _compare_tensors(actual, expected, options):
    _attribute("shape", actual.shape, expected.shape)
    if options["check_device"]:
        _attribute("device", actual.device, expected.device)
    elif actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if options["check_dtype"]:
        _attribute("dtype", actual.dtype, expected.dtype)
    if options["check_stride"]:
        _attribute("stride()", actual.stride(), expected.stride())
    with no_grad():
        actual, expected = actual.detach(), expected.detach()
        if actual.dtype is not expected.dtype:
            common = _dtype.promote_types(actual.dtype, expected.dtype)
            actual, expected = actual.to(common), expected.to(common)
        rtol, atol = _tolerances(options, actual.dtype.name)
        matches = compare.isclose(actual, expected, rtol=rtol, atol=atol,
                                  equal_nan=bool(options["equal_nan"]))
        if compare.all_true(matches):
            return
        if actual.ndim == 0:
            raise _Mismatch(AssertionError, _scalar_message(actual.item(), expected.item(),
                                                            rtol, atol))
        raise _Mismatch(AssertionError, _tensor_message(actual, expected, matches, rtol, atol))


def _tensor_message(actual, expected, matches, rtol, atol):
    import numgrad as ng
    exact = rtol == 0 and atol == 0
    total = matches.numel()
    mismatched = total - int(ng.sum(matches).item())
    a, e, ok = actual.reshape(-1), expected.reshape(-1), matches.reshape(-1)
    if not a.dtype.is_floating_point:  # integer differences in int64 (no wrap-around)
        a, e = a.to(ng.int64), e.to(ng.int64)
    half = a.dtype in (ng.float16, ng.bfloat16)
    if half:  # numgrad stores 16-bit floats only: float32 math, each result rounded once
        a, e = a.float(), e.float()
    diff = ng.where(ok, ng.zeros_like(a), ng.abs(a - e))
    if half:
        diff = diff.to(actual.dtype).float()
    rel = diff / ng.abs(e)
    if half:
        rel = rel.to(actual.dtype).float()
    rel = ng.where(ok, ng.zeros_like(rel), rel)
    lines = [f"Tensor-likes are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"]
    for kind, values, tol in (("absolute", diff, atol), ("relative", rel, rtol)):
        value, flat = ng.max(values, 0)
        index = tuple(int(i) for i in np.unravel_index(int(flat.item()), tuple(actual.shape)))
        line = f"Greatest {kind} difference: {value.item()} at index {index}"
        lines.append(line if exact else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)
