"""Closeness and equality of whole tensors: ``isclose``, ``allclose``, ``equal``, and the
conversion ``type_as``. They are compositions of elementwise and reduction ops (kernels), with
PyTorch's argument checks and messages."""

import numbers

from numgrad import _dtype
from numgrad.autograd.grad_mode import no_grad
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import unary
from numgrad.ops._util import Tensor, dtype_of
from numgrad.ops.registry import declare
from numgrad.ops.shape import to_dtype


def _tensor_arg(fname, value, name, pos):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(value).__name__}")


def _tolerance(fname, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fname}(): argument '{name}' must be float, not "
                        f"{type(value).__name__}")
    value = float(value)
    if not value >= 0:
        raise RuntimeError(f"{name} must be greater than or equal to zero, but got {value:g}")
    return value


def _close(fname, input, other, rtol, atol, equal_nan):
    _tensor_arg(fname, input, "input", 1)
    _tensor_arg(fname, other, "other", 2)
    da, db = dtype_of(input), dtype_of(other)
    if da is not db:
        raise RuntimeError(f"{da._legacy} did not match {db._legacy}")
    rtol = _tolerance(fname, "rtol", rtol)
    atol = _tolerance(fname, "atol", atol)
    input, other = _computable(input), _computable(other)
    with no_grad():
        close = ew.eq(input, other)
        floating = da.is_floating_point
        if equal_nan and floating:
            close = ew.logical_or(close, ew.logical_and(ew.isnan(input), ew.isnan(other)))
        if rtol == 0 and atol == 0:
            return close
        if not floating:  # the error is measured in the default float dtype
            fd = _dtype.get_default_dtype()
            input, other = to_dtype(input, fd), to_dtype(other, fd)
        # |input - other| <= atol + rtol * |other|, where that difference is finite
        allowed = ew.add(unary.abs(ew.mul(other, rtol)), atol)
        actual = unary.abs(ew.sub(input, other))
        within = ew.logical_and(ew.isfinite(actual), ew.le(actual, allowed))
        return ew.logical_or(close, within)


def _computable(t):
    """16-bit floats compare through their (exact) float32 values: numgrad only stores them."""
    if t._data.itemsize == 2 and t.dtype in (_dtype.float16, _dtype.bfloat16):
        return to_dtype(t.detach(), _dtype.float32)
    return t


def all_true(mask):
    """Whether every element of boolean tensor ``mask`` is True (one host read)."""
    if mask._data.size == 0:
        return True
    return red.sum(ew.logical_not(mask)).item() == 0


@declare()
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (or equal), as a bool tensor."""
    return _close("isclose", input, other, rtol, atol, equal_nan)


@declare()
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether ``isclose`` holds for every element (a Python bool)."""
    return all_true(_close("allclose", input, other, rtol, atol, equal_nan))


@declare()
def equal(input, other):
    """Whether both tensors have the same shape and elements (NaN equals nothing)."""
    _tensor_arg("equal", input, "input", 1)
    _tensor_arg("equal", other, "other", 2)
    if input._data.shape != other._data.shape:
        return False
    with no_grad():
        return all_true(ew.eq(_computable(input), _computable(other)))


@declare(nodes=("ToCopyBackward0",), variants=("method",))
def type_as(input, other):
    """``input`` in ``other``'s dtype (``input`` itself when it already is)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    return input.type(other.type())
