"""Ops along one dim, each declared once: ``cumsum``, ``sort``, ``argsort`` (the line kernels
of ``numgrad.kernels.lines``, one source for CPU and CUDA), and ``tril``/``triu``."""

import numpy as np

from numgrad import _arrays, _dtype
from numgrad._shape import wrap_dim
from numgrad.kernels import LazyKernels
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops._util import EW, RED, Tensor, _wrap, as_type, dtype_of
from numgrad.ops.registry import op, respell

LINES = LazyKernels("lines")


def _check_tensor(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _check_int(v, fn, arg, pos):
    if v.__class__ is bool or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be int, not "
                        f"{type(v).__name__}")


def _line_view(a, d):
    """C-contiguous ``a`` as (outer, n, inner) around dim ``d`` (0-d arrays as one element)."""
    a = _arrays.contiguous(a)
    if a.ndim == 0:
        return a.reshape(1, 1, 1)
    return RED.as3d(a, d, d + 1)


# ----------------------------------------------------------------------------------------
# cumsum
# ----------------------------------------------------------------------------------------


def _reverse_cumsum(g, dim):
    """sum_{j >= i} g_j along ``dim``: the total minus the sum before i."""
    total = red.sum(g, dim, keepdim=True) if g.dim() else g
    return ew.add(ew.sub(total, cumsum(g, dim)), g)


# d/dx_j (sum_{i <= k} x_i) = [j <= k]: the gradient summed from the end
@op(node="CumsumBackward0", grads={"self": lambda grad, dim: _reverse_cumsum(grad, dim)},
    variants=("function", "method", "inplace"))
@respell
def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sum along ``dim``; integers and bools sum in int64 (as PyTorch)."""
    _check_tensor(input, "cumsum")
    _check_int(dim, "cumsum", "dim", 2)
    x = input._data
    d = wrap_dim(dim, max(x.ndim, 1))
    in_dt = dtype_of(input)
    dt = _dtype.get(dtype) or (in_dt if in_dt._kind == 2 else _dtype.int64)
    xd = _line_view(as_type(input, dt), d)
    r = _arrays.empty(xd, xd.shape, dt.np)
    LINES.cumsum_3d(xd, r, np.float64(0.0) if dt._kind == 2 else np.int64(0))
    return r.reshape(x.shape), {"dim": int(dim)}


# ----------------------------------------------------------------------------------------
# sort, argsort
# ----------------------------------------------------------------------------------------


def _sort_backward(grad, dim, indices, self_sym_sizes):
    """The gradient of each sorted value goes back to where it came from."""
    from numgrad._factories import zeros
    from numgrad.ops.indexing import scatter_add
    z = zeros(self_sym_sizes, dtype=grad.dtype, device=grad.device)
    if not z.dim():
        return ew.add(z, grad)
    return scatter_add(z, dim, _wrap(indices), grad)


def _sorted(input, dim, descending, fn):
    _check_tensor(input, fn)
    _check_int(dim, fn, "dim", 2)
    x = input._data
    d = wrap_dim(dim, max(x.ndim, 1))
    dt = dtype_of(input)
    if dt is _dtype.bool_:
        xd = _line_view(as_type(input, _dtype.uint8), d)
    else:
        xd = _line_view(x, d)
    vals = _arrays.empty(xd, xd.shape, xd.dtype)
    idx = _arrays.empty(xd, xd.shape, np.dtype(np.int64))
    LINES.sort_3d(xd, vals, idx, bool(descending))
    if dt is _dtype.bool_:
        vals = EW.unary(EW.copy, vals, np.dtype(np.bool_))
    return vals.reshape(x.shape), idx.reshape(x.shape)


sort_return = red._return_type("sort")


# d/dx sort(x) = the permutation: grad scattered back to the sorted indices
@op(node="SortBackward0", outputs=sort_return, save=("self_sym_sizes", "dim", "indices"),
    grads={"self": lambda grad, self_sym_sizes, dim, indices: _sort_backward(
        grad, dim, indices, self_sym_sizes)})
@respell
def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """Values sorted along ``dim`` and their indices (a stable sort; NaN sorts as the largest
    value, as PyTorch)."""
    vals, idx = _sorted(input, dim, descending, "sort")
    return (vals, idx), {"dim": int(dim), "indices": idx, "self_sym_sizes": tuple(input.shape)}


@op()
@respell
def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort ``input`` along ``dim`` (no gradient)."""
    _, idx = _sorted(input, dim, descending, "argsort")
    return idx, {}


# ----------------------------------------------------------------------------------------
# tril, triu
# ----------------------------------------------------------------------------------------


def _triangle(input, diagonal, fn, side):
    _check_tensor(input, fn)
    _check_int(diagonal, fn, "diagonal", 2)
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"{fn}: input tensor must have at least 2 dimensions")
    from numgrad._factories import arange
    rows, cols = x.shape[-2], x.shape[-1]
    r = arange(rows, dtype=_dtype.int64, device=input.device)._data.reshape(rows, 1)
    c = arange(cols, dtype=_dtype.int64, device=input.device)._data.reshape(1, cols)
    offset = EW.binary(EW.sub, c, r, np.dtype(np.int64), (rows, cols))
    return EW.binary(EW.tri_keep, x, offset, x.dtype, x.shape, int(diagonal), side)


# d/dx tril(x, k) = the same lower triangle: tril(grad, k)
@op(node="TrilBackward0", grads={"self": lambda grad, diagonal: tril(grad, diagonal)},
    variants=("function", "method", "inplace"))
def tril(input, diagonal=0, *, out=None):
    """The lower triangle of the last two dims (on and below diagonal ``diagonal``)."""
    return _triangle(input, diagonal, "tril", -1), {"diagonal": int(diagonal)}


# d/dx triu(x, k) = the same upper triangle: triu(grad, k)
@op(node="TriuBackward0", grads={"self": lambda grad, diagonal: triu(grad, diagonal)},
    variants=("function", "method", "inplace"))
def triu(input, diagonal=0, *, out=None):
    """The upper triangle of the last two dims (on and above diagonal ``diagonal``)."""
    return _triangle(input, diagonal, "triu", 1), {"diagonal": int(diagonal)}
