"""Reordering copies: ``flip`` (``FlipBackward0``), ``fliplr``, ``flipud`` and ``roll``
(``RollBackward0``). Each is the copy kernel run over a reversed or split view; each one's
gradient is the same op undone (flip again, roll back)."""

import operator

from numgrad import _arrays
from numgrad._shape import wrap_dim
from numgrad.autograd.graph import Node
from numgrad.ops._util import EW, Tensor, _wrap, attach, edge, state
from numgrad.ops.registry import declare


def _check_tensor(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _ints(v, fn, arg, pos):
    """A tuple of ints from a tuple/list argument (PyTorch's TypeError otherwise)."""
    if isinstance(v, (tuple, list)):
        try:
            return tuple(operator.index(i) for i in v)
        except TypeError:
            pass
    raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, not "
                    f"{type(v).__name__}")


class FlipBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dims",)
    _meta_only = True

    # d/dx flip(x, dims) = flip(g, dims)
    def _backward(self, g):
        return (flip(g, self._saved[0]),)


def _flipped(input, dims):
    x = input._data
    key = tuple(slice(None, None, -1) if d in dims else slice(None) for d in range(x.ndim))
    return _wrap(EW.unary(EW.copy, x[key] if key else x, x.dtype))  # x[()] is a scalar


def _flip_method(self, *dims):
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    return flip(self, dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list))
                else dims)


@declare(nodes=("FlipBackward0",), method=_flip_method)
def flip(input, dims):
    """A copy with the order of elements reversed along ``dims``."""
    _check_tensor(input, "flip")
    dims = _ints(dims, "flip", "dims", 2)
    nd = input._data.ndim
    wrapped = []
    for d in dims:
        w = wrap_dim(d, nd)
        if w in wrapped:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        wrapped.append(w)
    out = _flipped(input, wrapped if nd else [])
    if state.enabled and input._requires_grad:
        attach(out, FlipBackward0((edge(input),), (tuple(wrapped),)))
    return out


@declare(nodes=("FlipBackward0",))
def fliplr(input):
    """``flip`` of dim 1 (columns of a matrix)."""
    _check_tensor(input, "fliplr")
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@declare(nodes=("FlipBackward0",))
def flipud(input):
    """``flip`` of dim 0 (rows of a matrix)."""
    _check_tensor(input, "flipud")
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class RollBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dims", "shifts")
    _meta_only = True

    # d/dx roll(x, s, dims) = roll(g, -s, dims)
    def _backward(self, g):
        dims, shifts = self._saved
        if not dims:
            return (roll(g, tuple(-s for s in shifts)),)
        return (roll(g, tuple(-s for s in shifts), dims),)


def _rolled(x, shift, d):
    """``x`` (an array) rolled by ``shift`` along ``d``: two copies into a new array."""
    out = _arrays.empty(x, x.shape, x.dtype)
    n = x.shape[d]
    if not out.size:
        return out
    s = shift % n
    lead = (slice(None),) * d
    if s:
        EW.unary(EW.copy, x[lead + (slice(n - s, None),)], x.dtype,
                 out=out[lead + (slice(0, s),)])
    EW.unary(EW.copy, x[lead + (slice(0, n - s),)], x.dtype, out=out[lead + (slice(s, None),)])
    return out


@declare(nodes=("RollBackward0",))
def roll(input, shifts=None, dims=None):
    """Elements shifted by ``shifts`` along ``dims`` (of the flattened tensor when ``dims`` is
    None), wrapping around."""
    _check_tensor(input, "roll")
    if shifts is None:
        raise TypeError('roll() missing 1 required positional arguments: "shifts"')
    shifts = (shifts,) if hasattr(shifts, "__index__") and not isinstance(shifts, bool) \
        else _ints(shifts, "roll", "shifts", 2)
    if dims is None:
        dims = ()
    elif hasattr(dims, "__index__"):
        dims = (operator.index(dims),)
    else:
        dims = _ints(dims, "roll", "dims", 3)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims) and (dims or len(shifts) != 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    x = input._data
    if x.ndim == 0 and dims:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    wrapped = tuple(wrap_dim(d, x.ndim) for d in dims)
    if not dims:
        flat = _arrays.contiguous(x).reshape(-1)
        r = _rolled(flat, shifts[0], 0).reshape(x.shape)
    else:
        r = x
        for s, d in zip(shifts, wrapped):
            r = _rolled(r, s, d)
    out = _wrap(r)
    if state.enabled and input._requires_grad:
        attach(out, RollBackward0((edge(input),), (wrapped, tuple(shifts))))
    return out
