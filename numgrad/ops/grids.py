"""Index grids: ``meshgrid`` (broadcast views, ``ExpandBackward0``), ``tril_indices`` and
``triu_indices`` (the coordinates of a triangle, row by row)."""

import operator
import warnings

from numgrad import _dtype
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops import shape as sh
from numgrad.ops._util import Tensor
from numgrad.ops.registry import declare


@declare(nodes=("ExpandBackward0",), variants=("function",))
def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 0-D/1-D tensors: output i varies along dim i (``"ij"``) or, for
    the first two, along the other one (``"xy"``, NumPy's default)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    if indexing not in ("ij", "xy"):
        raise RuntimeError('torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f"{indexing}")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    sizes = [t._data.size for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(tensors)
    for a, n in zip(axes, sizes):
        shape[a] = n
    out = []
    for t, a in zip(tensors, axes):
        view = [1] * len(tensors)
        view[a] = sizes[axes.index(a)]
        out.append(sh.expand(sh.view(t, view), shape))
    return tuple(out)


def _triangle_indices(row, col, offset, dtype, device, fn, lower):
    for arg, v, pos in (("row", row, 1), ("col", col, 2), ("offset", offset, 3)):
        if v.__class__ is bool or not hasattr(v, "__index__"):
            raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be int, not "
                            f"{type(v).__name__}")
    row, col, offset = operator.index(row), operator.index(col), operator.index(offset)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dt = _dtype.get(dtype) if dtype is not None else _dtype.int64
    if dt._kind != 1:
        raise NotImplementedError(f'"{fn}" not implemented for \'{dt._legacy}\'')
    from numgrad._factories import arange
    r = sh.reshape(arange(row, device=device), (row, 1))
    c = sh.reshape(arange(col, device=device), (1, col))
    diff = ew.sub(c, r)
    mask = ew.le(diff, offset) if lower else ew.ge(diff, offset)
    return sh.contiguous(sh.t(ix.nonzero(mask))).to(dt)


@declare(variants=("function",))
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) coordinates of the lower triangle of a ``row`` x ``col`` matrix, as a
    2 x N tensor in row-major order."""
    return _triangle_indices(row, col, offset, dtype, device, "tril_indices", True)


@declare(variants=("function",))
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The coordinates of the upper triangle (see ``tril_indices``)."""
    return _triangle_indices(row, col, offset, dtype, device, "triu_indices", False)
