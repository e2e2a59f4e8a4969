"""Products: ``cumprod`` (the line kernel ``cumprod_line``, ``CumprodBackward0``), ``prod``
(the last cumulative product, ``ProdBackward0``/``ProdBackward1``) and ``cross``
(``LinalgCrossBackward0``).

The derivatives of ``prod`` and ``cumprod`` hold where the input has zeros (where ``result /
x`` does not) and take PyTorch's branches, so NaNs and infs land where PyTorch puts them:
cumprod's first-order gradient is one line kernel (``cumprod_backward_line``); with
create_graph both are numgrad ops over the zeros, differentiable again."""

import warnings

import numpy as np

from numgrad import _arrays, _dtype
from numgrad._shape import broadcast_shapes, wrap_dim
from numgrad.autograd.grad_mode import no_grad
from numgrad.autograd.graph import Node
from numgrad.ops import elementwise as ew
from numgrad.ops import lines
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, Tensor, _wrap, as_type, attach, dtype_of, edge, meta_for, state
from numgrad.ops.registry import declare, op, respell
from numgrad.ops.reorder import flip


def _check_tensor(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _result_dtype(input, dtype):
    in_dt = dtype_of(input)
    return _dtype.get(dtype) or (in_dt if in_dt._kind == 2 else _dtype.int64)


def _cumprod_array(input, d, dt):
    """Cumulative products of ``input`` along ``d`` in dtype ``dt`` (an array of its shape)."""
    x = input._data
    xd = lines._line_view(as_type(input, dt), d)
    r = _arrays.empty(xd, xd.shape, dt.np)
    lines.LINES.cumprod_3d(xd, r, np.float64(1.0) if dt._kind == 2 else np.int64(1))
    return r.reshape(x.shape)


def _reverse_cumsum(g, dim):
    """sum_{k >= i} g_k along ``dim``."""
    return flip(lines.cumsum(flip(g, (dim,)), dim), (dim,))


def _cumprod_backward(grad, self, dim, result):
    """sum_{k >= i} g_k d(out_k)/dx_i. Without create_graph: PyTorch's O(n) rule around the
    first zero of each line, in one line kernel (``cumprod_backward_line``: its NaNs and infs
    where x has zeros, infs or NaNs are PyTorch's). With create_graph, differentiable ops:
    sum_{k >= i} g_k out_k / x_i when no x is 0 (one host read checks, as PyTorch does), else
    the products written out (see below)."""
    if self.dim() == 0 or not self.numel() or self.shape[dim] == 1:
        g = grad
    elif not state.enabled:
        g = _cumprod_backward_lines(grad, self, dim, result)
    elif red.sum(ew.eq(self, 0)).item() == 0:
        g = ew.div(_reverse_cumsum(ew.mul(grad, result), dim), self)
    else:
        g = _cumprod_backward_with_zeros(grad, self, dim)
    return g if g.dtype is self.dtype else sh.to_dtype(g, self.dtype)


def _cumprod_backward_lines(grad, self, dim, result):
    """The line kernel's gradient, computed in the result's dtype (``dtype=`` may widen it)."""
    dt = dtype_of(result)
    xd = lines._line_view(as_type(self, dt), dim)
    yd = lines._line_view(result._data, dim)
    gd = lines._line_view(as_type(grad, dt), dim)
    out = _arrays.empty(xd, xd.shape, dt.np)
    lines.LINES.cumprod_backward_3d(xd, yd, gd, out)
    return _wrap(out.reshape(self.shape))


def _cumprod_backward_with_zeros(grad, self, dim):
    """sum_{k >= i} g_k prod_{j <= k, j != i} x_j with no division: row i of an n x n
    matrix per line holds x with x_i replaced by 1, whose cumulative products are the
    prod_{j <= k, j != i} x_j (differentiable again at the zeros)."""
    from numgrad._factories import arange
    n = self.shape[dim]
    x = sh.movedim(self, dim, -1)
    g = sh.movedim(grad, dim, -1)
    i = sh.reshape(arange(n, device=self.device), (n, 1))
    k = sh.reshape(arange(n, device=self.device), (1, n))
    rows = cumprod(ew.where(ew.eq(i, k), 1.0, sh.unsqueeze(x, -2)), -1)
    terms = ew.where(ew.ge(k, i), ew.mul(rows, sh.unsqueeze(g, -2)), 0.0)
    return sh.movedim(red.sum(terms, -1), -1, dim)


# d/dx_i cumprod(x)_k = prod_{j <= k, j != i} x_j for k >= i: sum_{k >= i} g_k out_k / x_i
# before the first zero (see _cumprod_backward for the rest)
@op(node="CumprodBackward0", grads={"self": _cumprod_backward}, save=("dim", "result", "self"))
@respell
def cumprod(input, dim=None, *, dtype=None, out=None):
    """Cumulative product along ``dim``; integers and bools multiply in int64 (as PyTorch)."""
    _check_tensor(input, "cumprod")
    if dim is None:
        raise TypeError('cumprod() missing 1 required positional arguments: "dim"')
    lines._check_int(dim, "cumprod", "dim", 2)
    d = wrap_dim(dim, max(input._data.ndim, 1))
    return _cumprod_array(input, d, _result_dtype(input, dtype)), {"dim": d}


def _keep(t, ndim, dim, keepdim):
    """``t`` reduced over ``dim`` (None: all) with the reduced dims back as size 1."""
    if keepdim:
        return t
    if dim is None:
        return sh.reshape(t, (1,) * ndim)
    return sh.unsqueeze(t, dim)


def _exclusive_cumprod(x, d):
    """prod_{j < i} x_j along ``d`` (1 at the start)."""
    from numgrad._factories import ones
    n = x.shape[d]
    first = ones(x.shape[:d] + (1,) + x.shape[d + 1:], dtype=x.dtype, device=x.device)
    return cumprod(sh.cat([first, sh.slice_dim(x, d, 0, n - 1, 1)], d), d)


def _prod_backward(grad, self, result, dim, keepdim):
    """g * prod_{j != i} x_j, as PyTorch picks it (one host read counts the zeros): without
    zeros g * result / x (NaN where x is inf or NaN); a product of everything with several
    zeros (create_graph off) 0; else the products before i times those after i (exact, and
    differentiable again, where the input has zeros)."""
    nd = self.dim()
    if not nd:
        return grad
    if not self.numel():
        return ew.mul(self, 0.0)
    g = _keep(grad, nd, dim, keepdim)
    zeros = red.sum(ew.eq(self, 0)).item()
    if not zeros:
        return ew.mul(g, ew.div(_keep(result, nd, dim, keepdim), self))
    if dim is None and zeros > 1 and not state.enabled:
        return _wrap(_arrays.zeros(self._data, self._data.shape, self._data.dtype))
    x = sh.reshape(self, (-1,)) if dim is None else self
    d = 0 if dim is None else dim
    others = ew.mul(_exclusive_cumprod(x, d),
                    flip(_exclusive_cumprod(flip(x, (d,)), d), (d,)))
    return ew.mul(g, sh.reshape(others, self.shape) if dim is None else others)


class ProdBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "result")

    # d/dx_i prod(x) = prod_{j != i} x_j (= prod(x) / x_i without zeros)
    def _backward(self, g):
        x, r = self._saved
        return (_prod_backward(g, x, _saved_result(self, r), None, False),)


class ProdBackward1(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "keepdim", "self", "result")

    # d/dx_i prod(x, dim) = prod_{j != i} x_j along dim
    def _backward(self, g):
        dim, keepdim, x, r = self._saved
        return (_prod_backward(g, x, _saved_result(self, r), dim, keepdim),)


def _saved_result(node, r):
    from numgrad.ops._util import wrap_out
    return wrap_out(node, r)


def _prod_dims(input, dim, keepdim, dtype=None):
    """The product over ``dim`` (None: all) as a tensor, without recording: the last
    cumulative product."""
    dt = _result_dtype(input, dtype)
    x = input._data
    with no_grad():
        if dim is None:
            flat = sh.reshape(input.detach(), (-1,)) if x.ndim else input.detach()
            n = flat._data.size
            if not n:
                return _wrap(_arrays.ones(x, (), dt.np))
            c = _cumprod_array(flat, 0, dt).reshape(-1)
            return _wrap(EW.unary(EW.copy, c[n - 1:].reshape(()), dt.np))
        d = dim
        if not x.ndim:
            return _wrap(EW.unary(EW.copy, x, dt.np))
        n = x.shape[d]
        shape = x.shape[:d] + ((1,) if keepdim else ()) + x.shape[d + 1:]
        if not n:
            return _wrap(_arrays.ones(x, shape, dt.np))
        c = _wrap(_cumprod_array(input, d, dt))
        last = sh.slice_dim(c, d, n - 1, n, 1)
        return sh.reshape(sh.contiguous(last), shape)


_ALL = object()  # prod(x): PyTorch refuses an explicit dim=None
_SIGNATURES = ("(Tensor input, *, torch.dtype dtype = None)\n"
               " * (Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype = None)")


@declare(nodes=("ProdBackward0", "ProdBackward1"))
@respell
def prod(input, dim=_ALL, keepdim=False, *, dtype=None):
    """The product of all elements (``ProdBackward0``) or along ``dim`` (``ProdBackward1``);
    integers and bools multiply in int64."""
    _check_tensor(input, "prod")
    if dim is _ALL:
        dim = None
    elif dim is None or isinstance(dim, (tuple, list)) or not hasattr(dim, "__index__"):
        got = "dim=NoneType, " if dim is None else type(dim).__name__
        raise TypeError(f"prod() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:\n * {_SIGNATURES}")
    else:
        dim = wrap_dim(dim, max(input._data.ndim, 1))
    r = _prod_dims(input, dim, bool(keepdim), dtype)
    out = _wrap(r._data)
    if state.enabled and input._requires_grad and out._data.dtype.kind == "f":
        # the derivative reads the input in the result's dtype; the engine casts the gradient
        # back (``_meta``)
        x = input if dtype_of(input) is dtype_of(out) else sh.to_dtype(input, dtype_of(out))
        if dim is None:
            node = ProdBackward0((edge(input),), (x, out._data))
        else:
            node = ProdBackward1((edge(input),), (dim, bool(keepdim), x, out._data))
        if x is not input:
            node._meta = ((input._data.shape, dtype_of(input)),)
        attach(out, node)
    return out


# ----------------------------------------------------------------------------------------
# cross
# ----------------------------------------------------------------------------------------


class LinalgCrossBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "other", "self")

    # d/da (a x b) . g = b x g, d/db (a x b) . g = g x a
    def _backward(self, g):
        d, b, a = self._saved
        na, nb = self.next_functions
        return (cross(b, g, dim=d) if na[0] is not None else None,
                cross(g, a, dim=d) if nb[0] is not None else None)


def _components(t, d):
    return [sh.select(t, d, i) for i in range(3)]


@declare(nodes=("LinalgCrossBackward0",))
def cross(input, other, dim=None):
    """The cross product of 3-vectors along ``dim`` (inputs broadcast)."""
    _check_tensor(input, "cross")
    if not isinstance(other, Tensor):
        raise TypeError("cross(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    a, b = input, other
    if a._data.ndim != b._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected scalar type {dtype_of(a)._legacy} but found "
                           f"{dtype_of(b)._legacy}")
    shape = broadcast_shapes(a._data.shape, b._data.shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning, stacklevel=2)
        sizes = [i for i, n in enumerate(shape) if n == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        d = sizes[0]
    else:
        d = wrap_dim(dim, len(shape))
        na, nb = a._data.shape[d], b._data.shape[d]
        if na != 3 or nb != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {na} "
                               f"and {nb}")
    with no_grad():
        x, y = _components(a.detach(), d), _components(b.detach(), d)
        parts = [ew.sub(ew.mul(x[(i + 1) % 3], y[(i + 2) % 3]),
                        ew.mul(x[(i + 2) % 3], y[(i + 1) % 3])) for i in range(3)]
        r = sh.stack(parts, d)
    out = _wrap(r._data)
    if state.enabled and (a._requires_grad or b._requires_grad):
        node = LinalgCrossBackward0((edge(a), edge(b)), (d, b, a))
        dt = dtype_of(out)
        metas = (meta_for(a, shape, dt), meta_for(b, shape, dt))
        if metas != (None, None):
            node._meta = metas
        attach(out, node)
    return out
