"""Diagonals: ``diagonal`` (a strided view, ``DiagonalBackward0``), ``diag_embed`` (the adjoint:
values written on a diagonal of zeros, ``DiagEmbedBackward0``), ``diag`` (one or the other by
the input's rank) and ``trace``. The backward of each is the other, so double backward needs
no extra rule. The copies run the copy kernel."""

import operator

from numgrad import _arrays
from numgrad._shape import wrap_dim
from numgrad.autograd.graph import Node
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, Tensor, _wrap, attach, dtype_of, edge, state
from numgrad.ops.registry import declare


def _check_tensor(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _check_int(v, fn, arg, pos):
    if v.__class__ is bool or not isinstance(v, int):
        try:
            return operator.index(v)
        except TypeError:
            raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be int, not "
                            f"{type(v).__name__}") from None
    return v


def _dims(ndim, dim1, dim2):
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def diagonal_view(arr, offset, d1, d2):
    """The diagonal of ``arr`` in dims ``d1`` != ``d2`` (shifted by ``offset``) as a strided
    view whose last dim runs along it (the other dims keep their order)."""
    shape, strides = arr.shape, arr.strides
    n1, n2 = shape[d1], shape[d2]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    key = [slice(None)] * arr.ndim
    if length:  # start the view at the diagonal's first element
        key[d1] = slice(max(0, -offset), None)
        key[d2] = slice(max(0, offset), None)
    start = arr[tuple(key)]
    keep = [i for i in range(arr.ndim) if i not in (d1, d2)]
    return _arrays.as_strided(start, tuple(shape[i] for i in keep) + (length,),
                              tuple(strides[i] for i in keep) + (strides[d1] + strides[d2],))


class DiagonalBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim1", "dim2", "offset", "self_sym_sizes")
    _meta_only = True

    # d/dx diagonal(x) = g placed on the same diagonal of zeros
    def _backward(self, g):
        d1, d2, offset, shape = self._saved
        return (place_on_diagonal(g, shape, offset, d1, d2, DiagonalBackwardBackward0),)


DiagonalBackward0_copy = type("DiagonalBackward0_copy", (DiagonalBackward0,), {"__slots__": ()})


class DiagonalBackwardBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim1", "dim2", "offset")
    _meta_only = True

    # d/dg (g placed on a diagonal) = the diagonal of gg
    def _backward(self, gg):
        d1, d2, offset = self._saved
        return (diagonal(gg, offset, d1, d2),)


class DiagEmbedBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim1", "dim2", "offset")
    _meta_only = True

    # d/dx diag_embed(x) = the diagonal of g
    def _backward(self, g):
        d1, d2, offset = self._saved
        return (diagonal(g, offset, d1, d2),)


def place_on_diagonal(g, shape, offset, d1, d2, node_cls):
    """Zeros of ``shape`` with ``g`` written on their diagonal (``node_cls`` records it)."""
    out_arr = _arrays.zeros(g._data, tuple(shape), g._data.dtype)
    view = diagonal_view(out_arr, offset, d1, d2)
    if view.size:
        EW.unary(EW.copy, g._data, out_arr.dtype, out=view)
    out = _wrap(out_arr)
    if state.enabled and g._requires_grad:
        attach(out, node_cls((edge(g),), (d1, d2, offset)))
    return out


@declare(nodes=("DiagonalBackward0",))
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of dims ``dim1``, ``dim2`` as a view (its last dim)."""
    _check_tensor(input, "diagonal")
    offset = _check_int(offset, "diagonal", "offset", 2)
    d1, d2 = _dims(input._data.ndim, dim1, dim2)
    out = sh.view_of(input, diagonal_view(input._data, offset, d1, d2))
    if state.enabled and input._requires_grad:
        attach(out, DiagonalBackward0((edge(input),), (d1, d2, offset, input._data.shape)))
    return out


@declare(nodes=("DiagEmbedBackward0",))
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonal (dims ``dim1``, ``dim2``) holds the last dim of ``input``; zeros
    elsewhere."""
    _check_tensor(input, "diag_embed")
    offset = _check_int(offset, "diag_embed", "offset", 2)
    shape = input._data.shape
    d1, d2 = _dims(len(shape) + 1, dim1, dim2)
    n = (shape[-1] if shape else 1) + abs(offset)
    batch = iter(shape[:-1])
    out_shape = tuple(n if i in (d1, d2) else next(batch) for i in range(len(shape) + 1))
    x = input if shape else sh.reshape(input, (1,))
    return place_on_diagonal(x, out_shape, offset, d1, d2, DiagEmbedBackward0)


@declare(nodes=("DiagEmbedBackward0", "DiagonalBackward0_copy"))
def diag(input, diagonal=0):
    """A 1-D input on the ``diagonal`` of a square matrix; the ``diagonal`` of a 2-D input
    (a copy)."""
    _check_tensor(input, "diag")
    k = _check_int(diagonal, "diag", "diagonal", 2)
    nd = input._data.ndim
    if nd == 1:
        return diag_embed(input, k, 0, 1)
    if nd != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")
    view = diagonal_view(input._data, k, 0, 1)
    out = _wrap(EW.unary(EW.copy, view, view.dtype))
    if state.enabled and input._requires_grad:
        attach(out, DiagonalBackward0_copy((edge(input),), (0, 1, k, input._data.shape)))
    return out


class TraceBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)
    _meta_only = True

    # d/dx trace(x) = the identity matrix times g
    def _backward(self, g):
        shape = self._saved[0]
        line = sh.expand(g, (min(shape),))
        return (place_on_diagonal(line, shape, 0, 0, 1, DiagonalBackwardBackward0),)


@declare(nodes=("TraceBackward0",))
def trace(input):
    """The sum of the main diagonal of a matrix."""
    _check_tensor(input, "trace")
    nd = input._data.ndim
    if nd != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {nd}")
    view = diagonal_view(input._data, 0, 0, 1)
    from numgrad.autograd.grad_mode import no_grad
    with no_grad():
        r = red.sum(_wrap(view))
    out = _wrap(r._data)
    if state.enabled and input._requires_grad and dtype_of(input)._kind == 2:
        attach(out, TraceBackward0((edge(input),), (input._data.shape,)))
    return out
