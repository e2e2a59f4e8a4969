"""Reductions: sum, mean, max/min (with indices), amax/amin, argmax/argmin, norm,
logsumexp, and the softmax family (which reduce along a dim inside their kernel)."""

import operator

import numpy as np

from numgrad import _arrays, _dtype, _hook
from numgrad._shape import reduced_shape, sum_to_axes, wrap_dim, wrap_dims
from numgrad.autograd.graph import Node
from numgrad.ops import elementwise as ew
from numgrad.ops import unary as un
from numgrad.ops._util import (
    EW,
    RED,
    Tensor,
    _wrap,
    as_type,
    attach,
    dtype_of,
    edge,
    state,
    wrap_out,
)
from numgrad.ops.registry import declare, flat1, respell, respelled

# ========================================================================================
# broadcasting a reduced gradient back (the differentiable "expand" of reduction rules)
# ========================================================================================


class ExpandBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)
    _meta_only = True

    # d/dg broadcast(g, shape) * scale = scale * sum_to_size(gg, g.shape)
    def _backward(self, gg):
        g_shape, scale = self._saved
        r = sum_to_size(gg, g_shape)
        return (r if scale == 1 else ew.mul(r, scale),)


def broadcast_to_shape(g, shape, scale=1):
    """``g`` (broadcastable to ``shape``) materialized at ``shape`` and multiplied by ``scale``;
    a fresh array, so the engine can hand it to a leaf without copying."""
    gd = g._data
    cpu = gd.__class__ is np.ndarray
    out_arr = _arrays.new(shape, gd.dtype) if cpu else _arrays.empty(gd, shape, gd.dtype)
    if gd.ndim == 0 and out_arr.size and cpu:
        # the usual case (sum/mean of everything) on the CPU: a fill
        EW.fill_scaled(gd.reshape(1), out_arr.reshape(-1), float(scale))
    elif scale == 1:
        EW.unary(EW.copy, g._data, out_arr.dtype, out=out_arr)
    else:
        EW.unary(EW.mul_s, g._data, out_arr.dtype, scale, out=out_arr)
    out = _wrap(out_arr)
    if state.enabled and g._requires_grad:
        attach(out, ExpandBackward0((edge(g),), (g._data.shape, scale)))
    return out


class SumToSizeBackward(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)
    _meta_only = True

    # d/dg sum_to_size(g, s) = broadcast back to g's shape
    def _backward(self, gg):
        return (broadcast_to_shape(gg, self._saved[0]),)


SumToSizeBackward.__name__ = SumToSizeBackward.__qualname__ = "SumBackward1"


def _size_arg(size, fn):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``: the ints of a ``size`` argument, with the
    TypeErrors of PyTorch's argument parser."""
    if not size:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    first = size[0]
    if len(size) == 1 and isinstance(first, (tuple, list)):
        size, seq = tuple(first), True
    elif len(size) > 1 and (isinstance(first, bool) or not hasattr(first, "__index__")):
        raise TypeError(f"{fn}() takes 1 positional argument but {len(size)} were given")
    else:
        seq = len(size) > 1
    for i, v in enumerate(size):
        if not isinstance(v, bool) and hasattr(v, "__index__"):
            continue
        name = type(v).__name__
        if not seq:
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{name}")
        if i == 0:
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, but "
                            f"found element of type {name} at pos 0")
        raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {i + 1} "
                        f"with error \"type must be tuple of ints,but got {name}\"")
    return tuple(operator.index(v) for v in size)


def _check_expandable(shape, src):
    """PyTorch's ``is_expandable_to(shape, src)``: each of ``shape``'s trailing sizes is
    ``src``'s or 1, and ``shape`` has no more dims."""
    ok = len(shape) <= len(src) and all(
        a == b or a == 1 for a, b in zip(reversed(shape), reversed(src)))
    if not ok:
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(src)}}}.")


@declare(nodes=("SumBackward1",), variants=("method",))
def sum_to_size(input, *size):
    """Sum ``input`` down to a shape it broadcasts from (the engine's unbroadcast)."""
    shape = _size_arg(size, "sum_to_size")
    src = input._data.shape
    if src == shape:
        return input
    _check_expandable(shape, src)
    out = _wrap(sum_to_array(input._data, shape).reshape(shape))
    if state.enabled and input._requires_grad:
        attach(out, SumToSizeBackward((edge(input),), (src,)))
    return out


def sum_to_array(a, shape):
    """Array ``a`` summed over the dims that ``shape`` (which ``a``'s shape broadcasts from,
    checked by the caller) lacks or has as 1, kept as 1s: the kernel call of ``sum_to_size``,
    also the engine's unbroadcast when no graph is recorded."""
    lead, kept = sum_to_axes(a.shape, shape)
    dims = tuple(range(lead)) + kept
    return RED.sum_dims(a, dims, a.dtype, 1.0 if a.dtype.kind == "f" else 1) if dims else a


def _one(t):
    return 1.0 if t._data.dtype.kind == "f" else 1


# ========================================================================================
# sum / mean
# ========================================================================================


class SumBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)
    _meta_only = True

    # d/dx sum(x) = 1 everywhere
    def _backward(self, g):
        return (broadcast_to_shape(g, self._saved[0]),)


class SumBackward1(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)
    _meta_only = True

    # d/dx sum(x, dims) = 1, the gradient repeated along the reduced dims
    def _backward(self, g):
        shape, keep_shape = self._saved
        return (broadcast_to_shape(_keepdim_view(g, keep_shape), shape),)


class MeanBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes", "self_sym_numel")
    _meta_only = True

    # d/dx mean(x) = 1/n
    def _backward(self, g):
        shape, n = self._saved
        return (broadcast_to_shape(g, shape, 1.0 / n if n else np.nan),)


class MeanBackward1(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)
    _meta_only = True

    # d/dx mean(x, dims) = 1/n over the reduced dims
    def _backward(self, g):
        shape, keep_shape, n = self._saved
        return (broadcast_to_shape(_keepdim_view(g, keep_shape), shape, 1.0 / n if n else np.nan),)


def _keepdim_view(g, keep_shape):
    if g._data.shape == keep_shape:
        return g
    from numgrad.ops.shape import reshape
    return reshape(g, keep_shape)


def _is_all(dim):
    return dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)


def _reduce_dims(dim, ndim):
    """``wrap_dims`` with every dim range-checked before duplicates, as PyTorch's reductions."""
    try:
        return wrap_dims(dim, ndim)
    except RuntimeError:  # a duplicate: an out-of-range dim after it still comes first
        for d in dim:
            wrap_dim(d, ndim)
        raise


def _reduce_sum(input, dim, keepdim, dt, mean):
    x = input._data
    shape = x.shape
    xd = as_type(input, dt)
    if _is_all(dim):
        n = x.size
        scale = (1.0 / n if n else np.nan) if mean else _one_dt(dt)
        r = RED.sum_all(xd, dt.np, scale)
        if keepdim:
            r = r.reshape((1,) * x.ndim)
        out = _wrap(r)
        if state.enabled and input._requires_grad:
            node = (MeanBackward0((edge(input),), (shape, n)) if mean
                    else SumBackward0((edge(input),), (shape,)))
            attach(out, node)
        return out
    dims = _reduce_dims(dim, x.ndim)
    n = 1
    for d in dims:
        n *= shape[d]
    scale = (1.0 / n if n else np.nan) if mean else _one_dt(dt)
    r = RED.sum_dims(xd, dims, dt.np, scale) if dims else EW.unary(EW.mul_s, xd, dt.np, scale)
    keep_shape = r.shape
    if not keepdim:
        r = r.reshape(reduced_shape(shape, dims, False))
    out = _wrap(r)
    if state.enabled and input._requires_grad:
        node = (MeanBackward1((edge(input),), (shape, keep_shape, n)) if mean
                else SumBackward1((edge(input),), (shape, keep_shape)))
        attach(out, node)
    return out


def _spelled(dim, keepdim, numpy_names):
    """``dim``/``keepdim`` from NumPy's ``axis``/``keepdims`` (anything else: TypeError)."""
    kwargs = {"dim": dim, "keepdim": keepdim}
    for k, v in respelled(numpy_names).items():
        if k not in kwargs:
            raise TypeError(f"got an unexpected keyword argument '{k}'")
        if k == "dim" and dim is not None:
            raise TypeError("got multiple values for argument 'dim'")
        kwargs[k] = v
    return kwargs


def _one_dt(dt):
    return 1.0 if dt._kind == 2 else 1


def sum(input, dim=None, keepdim=False, *, dtype=None, **numpy_names):  # noqa: A001
    """Sum over all elements (``SumBackward0``) or over ``dim`` (``SumBackward1``)."""
    if numpy_names:  # axis=, keepdims= (spelled inside: sum is too hot for a wrapper)
        return sum(input, dtype=dtype, **_spelled(dim, keepdim, numpy_names))
    in_dt = dtype_of(input)
    dt = _dtype.get(dtype) or (in_dt if in_dt._kind == 2 else _dtype.int64)
    return _reduce_sum(input, dim, keepdim, dt, mean=False)


def mean(input, dim=None, keepdim=False, *, dtype=None, **numpy_names):
    """Mean over all elements (``MeanBackward0``) or over ``dim`` (``MeanBackward1``)."""
    if numpy_names:
        return mean(input, dtype=dtype, **_spelled(dim, keepdim, numpy_names))
    dt = _dtype.get(dtype) or dtype_of(input)
    if dt._kind != 2:
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(
            f"mean(): could not infer output dtype. {which} dtype must be either a floating "
            f"point or complex dtype. Got: {dt._legacy}")
    return _reduce_sum(input, dim, keepdim, dt, mean=True)


# ========================================================================================
# max / min / amax / amin / argmax / argmin
# ========================================================================================


class _ReturnType(tuple):
    """Named (values, indices) pair that prints like ``torch.return_types.max``."""

    __slots__ = ()
    _name = "max"

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self):
        return f"torch.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


def _return_type(name):
    return type(name, (_ReturnType,), {"__slots__": (), "_name": name})


max_return = _return_type("max")
min_return = _return_type("min")


class EvenlyDistributedBackward(Node):
    """max()/min(): the gradient is shared equally by all elements that attain the extreme
    value (a nan extreme is attained by every nan)."""

    __slots__ = ()
    _names_of_saved = ("self", "result")

    # d/dx max(x) = [x == max] / #[x == max], where nan == nan
    def _backward(self, g):
        x, result = self._saved[:2]
        r = wrap_out(self, result)
        mask = ew.isnan(x) if r._data.dtype.kind == "f" and np.isnan(r.item()) else ew.eq(x, r)
        return (ew.where(mask, ew.div(g, sum(mask)), 0.0),)


class ScaleGradByCountBackward(Node):
    """amax/amin: the gradient is shared equally by the elements equal to the extreme value
    (none is equal to a nan extreme, so the gradient there is nan)."""

    __slots__ = ()
    _names_of_saved = ("self", "result")

    # d/dx amax(x, dims) = [x == amax] / #[x == amax] along dims
    def _backward(self, g):
        x, result, dims, keep_shape = self._saved
        r = wrap_out(self, result)
        if keep_shape is not None:
            from numgrad.ops.shape import reshape
            r = reshape(r, keep_shape)
            g = _keepdim_view(g, keep_shape)
        mask = ew.eq(x, r)
        count = sum(mask, dims, keepdim=keep_shape is not None)
        return (ew.mul(ew.div(g, count), mask),)


def _named(name, base):
    return type(name, (base,), {"__slots__": ()})


MaxBackward1 = _named("MaxBackward1", EvenlyDistributedBackward)
MinBackward1 = _named("MinBackward1", EvenlyDistributedBackward)
AmaxBackward0 = _named("AmaxBackward0", ScaleGradByCountBackward)
AminBackward0 = _named("AminBackward0", ScaleGradByCountBackward)


class MaxBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("indices", "self_sym_sizes", "dim", "keepdim")

    # d/dx max(x, dim) = 1 at the selected index along dim, 0 elsewhere
    def _backward(self, g):
        indices, shape, dim, keepdim = self._saved
        return (_scatter_along(g, indices, shape, dim, keepdim),)


MinBackward0 = type("MinBackward0", (MaxBackward0,), {"__slots__": ()})


def _check_nonempty(x, name):
    if x._data.size == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument.")


def _extreme_all(input, largest, node_cls, name):
    _check_nonempty(input, name)
    x = input._data
    r = RED.reduce_dims(RED.extreme_3d, x, tuple(range(x.ndim)), x.dtype, largest) \
        if x.ndim else x.copy()
    r = r.reshape(())
    out = _wrap(r)
    if state.enabled and input._requires_grad:
        attach(out, node_cls((edge(input),), (input, r, None, None)))
    return out


def _extreme_dim(input, dim, keepdim, largest, node_cls, ret):
    x = input._data
    d = wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        v, i = x.copy(), _arrays.zeros(x, (), np.int64)
    else:
        if x.shape[d] == 0:
            raise IndexError(
                f"{ret._name}(): Expected reduction dim {d} to have non-zero size.")
        x3 = RED.as3d(x, d, d + 1)
        v = _arrays.empty(x, (x3.shape[0], x3.shape[2]), x.dtype)
        i = _arrays.empty(x, (x3.shape[0], x3.shape[2]), np.int64)
        RED.extreme_index_3d(x3, v, i, largest)
        shape = reduced_shape(x.shape, (d,), keepdim)
        v = v.reshape(shape)
        i = i.reshape(shape)
    values = _wrap(v)
    indices = _wrap(i)
    if state.enabled and input._requires_grad:
        attach(values, node_cls((edge(input),), (i, x.shape, d, keepdim)))
    return ret(values, indices)


def max(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """max of all elements, max along ``dim`` -> (values, indices), or ``maximum(a, b)``."""
    if isinstance(dim, Tensor):
        return ew.maximum(input, dim)
    if dim is None:
        return _extreme_all(input, True, MaxBackward1, "max")
    return _extreme_dim(input, dim, keepdim, True, MaxBackward0, max_return)


def min(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """min of all elements, min along ``dim`` -> (values, indices), or ``minimum(a, b)``."""
    if isinstance(dim, Tensor):
        return ew.minimum(input, dim)
    if dim is None:
        return _extreme_all(input, False, MinBackward1, "min")
    return _extreme_dim(input, dim, keepdim, False, MinBackward0, min_return)


def _amax(input, dim, keepdim, largest, node_cls, name):
    x = input._data
    if _is_all(dim):
        _check_nonempty(input, name)
        dim = None
    else:
        for d in dim if isinstance(dim, (tuple, list)) else (dim,):
            w = wrap_dim(d, x.ndim)
            if x.ndim and x.shape[w] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    dims = wrap_dims(dim, x.ndim)
    if not dims:
        r = x.copy()
        keep_shape = r.shape
    else:
        r = RED.reduce_dims(RED.extreme_3d, x, dims, x.dtype, largest)
        keep_shape = r.shape
        if not keepdim:
            r = r.reshape(reduced_shape(x.shape, dims, False))
    out = _wrap(r)
    if state.enabled and input._requires_grad:
        attach(out, node_cls((edge(input),), (input, r, dims, keep_shape)))
    return out


def amax(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, True, AmaxBackward0, "amax")


def amin(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, False, AminBackward0, "amin")


def _arg(input, dim, keepdim, largest):
    x = input._data
    if x.dtype.kind == "b":
        raise RuntimeError(f"{'argmax' if largest else 'argmin'}(): does not support bool input")
    if dim is None:
        flat = x.reshape(1, -1, 1) if x.ndim else x.reshape(1, 1, 1)
        if flat.shape[1] == 0:
            raise IndexError(
                f"{'argmax' if largest else 'argmin'}(): Expected reduction dim to be "
                "specified for input.numel() == 0.")
        v = _arrays.empty(x, (1, 1), x.dtype)
        i = _arrays.empty(x, (1, 1), np.int64)
        RED.extreme_index_3d(flat, v, i, largest)
        return _wrap(i.reshape((1,) * x.ndim if keepdim else ()))
    res = _extreme_dim(input.detach(), dim, keepdim, largest, None,
                       max_return if largest else min_return)
    return res[1]


def argmax(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, False)


class ScatterAlongBackward(Node):
    __slots__ = ()

    # d/dg scatter(g, idx) = gather(gg, idx)
    def _backward(self, gg):
        indices, dim = self._saved
        x3 = RED.as3d(gg._data, dim, dim + 1)
        out = _arrays.empty(x3, (x3.shape[0], x3.shape[2]), gg._data.dtype)
        RED.take_along_3d(x3, indices.reshape(out.shape), out)
        return (_wrap(out.reshape(indices.shape)),)


def _scatter_along(g, indices, shape, dim, keepdim):
    """Zeros of ``shape`` with ``g`` placed at ``indices`` along ``dim``."""
    out_arr = _arrays.empty(g._data, shape, g._data.dtype)
    o3 = RED.as3d(out_arr, dim, dim + 1)
    RED.put_along_3d(_arrays.contiguous(g._data).reshape(o3.shape[0], o3.shape[2]),
                     indices.reshape(o3.shape[0], o3.shape[2]), o3)
    out = _wrap(out_arr)
    if state.enabled and g._requires_grad:
        attach(out, ScatterAlongBackward((edge(g),), (indices, dim)))
    return out


# ========================================================================================
# norm
# ========================================================================================


class LinalgVectorNormBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "result", "ord", "dim")

    # d/dx ||x||_p as _vector_norm_grad (p = 0 counts nonzeros: no gradient)
    def _backward(self, g):
        x, result, p, dims, keep_shape = self._saved
        if p == 0:  # the count of nonzeros: PyTorch defines no gradient (x.grad stays None)
            return (None,)
        n = wrap_out(self, result)
        if keep_shape is not None:
            from numgrad.ops.shape import reshape
            n = reshape(n, keep_shape)
            g = _keepdim_view(g, keep_shape)
        if x.dtype is g.dtype:
            return (_vector_norm_grad(g, x, n, p, dims),)
        # norm(dtype=...): the rule in the result's dtype, the gradient in the input's
        from numgrad.ops.shape import to_dtype
        return (to_dtype(_vector_norm_grad(g, to_dtype(x, g.dtype), n, p, dims), x.dtype),)


# the node torch.norm's (Tensor, Scalar p, dim) overload records, as pairwise_distance does
NormBackward1 = type("NormBackward1", (LinalgVectorNormBackward0,),
                     {"__slots__": (), "_names_of_saved": ("self", "result", "p", "dim")})


# d/dx ||x||_p = sgn(x) |x|^(p-1) / ||x||^(p-1)  (p=2: x/||x||; p=inf: ties share; 0 at 0)
def _vector_norm_grad(g, x, n, p, dims):
    if p == 1:
        return ew.mul(g, ew.sign(x))
    if p == 2:
        return ew.where(ew.eq(n, 0), 0.0, ew.mul(x, ew.div(g, n)))
    if p in (np.inf, -np.inf):
        mask = ew.eq(ew.abs(x), n)
        count = sum(mask, dims, keepdim=True)
        return ew.mul(ew.where(mask, ew.div(g, count), 0.0), ew.sign(x))
    ax = ew.abs(x)
    num = ew.mul(ew.mul(x, ew.pow(ax, p - 2)), g)
    return ew.where(ew.eq(n, 0), 0.0, ew.div(num, ew.pow(n, p - 1)))


def _matrix_norm_dims(input, p, dim):
    """torch.norm's matrix-norm path (a string ``p`` that is not "fro" over <= 2 dims): the
    checks of linalg.matrix_norm, then its two wrapped dims for the Frobenius norm."""
    if p not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if x.dtype.kind != "f":
        raise RuntimeError(
            "linalg.matrix_norm: Expected a floating point or complex tensor as input. "
            f"Got {dtype_of(input)._legacy}")
    dims = range(x.ndim) if dim is None else dim if isinstance(dim, (tuple, list)) else [dim]
    if len(dims) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                           + " ".join(str(d) for d in dims))
    a, b = (wrap_dim(d, x.ndim) for d in dims)
    if a == b:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({a}, {b})")
    return (a, b)


def _check_norm_identity(x, p, dim):
    """An inf or negative norm has no identity: PyTorch refuses it over an empty reduction."""
    what = f"linalg.vector_norm cannot compute the {format(p, 'g')} norm on "
    if _is_all(dim):
        raise RuntimeError(
            what + "an empty tensor because the operation does not have an identity")
    for d in dim if isinstance(dim, (tuple, list)) else (dim,):
        if x.shape[wrap_dim(d, x.ndim)] == 0:
            raise RuntimeError(
                what + f"the dimension {d}because this dimension is empty and the operation "
                "does not have an identity")


def _norm_dtype(input, dtype):
    """``norm(dtype=...)``: PyTorch's checks, then the input's data in that dtype (the norm
    and its gradient are computed there; the gradient comes back in the input's dtype)."""
    dt, in_dt = _dtype.get(dtype), dtype_of(input)
    if dt._kind != 2:
        raise RuntimeError(
            f"linalg.vector_norm: dtype should be floating point or complex, but got {dt._legacy}")
    if _dtype.promote_types(in_dt, dt) is not dt:
        raise RuntimeError(
            f"linalg.vector_norm: the dtype of the input ({in_dt._legacy}) should be convertible "
            f"without narrowing to the specified dtype ({dt._legacy})")
    return as_type(input, dt)


def _vector_norm_args(p, dim):
    """PyTorch's parser errors for ``linalg_vector_norm``'s ord (a number) and dim (ints; a
    bool is not one there)."""
    fn = "linalg_vector_norm(): argument"
    if isinstance(p, (list, tuple, dict, set)):
        raise TypeError(f"{fn} 'ord' (position 2) must be Number, not {type(p).__name__}")
    if dim is None:
        return
    seq = isinstance(dim, (list, tuple))
    first = (dim[0] if dim else None) if seq else dim
    if first is not None and (first.__class__ is bool or not hasattr(first, "__index__")):
        if seq or first.__class__ is bool:  # the parser checks a list's first item only
            raise TypeError(f"{fn} 'dim' (position 3) must be tuple of ints, but found "
                            f"element of type {type(first).__name__} at pos 0")
        raise TypeError(f"{fn} 'dim' (position 3) must be tuple of ints, not "
                        f"{type(first).__name__}")
    for i, d in enumerate(dim if seq else ()):  # then unpacks every item (a bool as an int)
        if not hasattr(d, "__index__"):
            raise TypeError(f"{fn} 'dim' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {type(d).__name__}\"")


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over all elements or ``dim`` (``LinalgVectorNormBackward0``)."""
    if not isinstance(p, str) or (p == "fro" and not isinstance(dim, (tuple, list))):
        _vector_norm_args(p, dim)
    if isinstance(p, str):
        if p != "fro" or (isinstance(dim, (tuple, list)) and len(dim) > 2):
            dim = _matrix_norm_dims(input, p, dim)
        if p == "nuc":
            from numgrad.ops.nuclear_norm import nuclear_norm
            return nuclear_norm(input, dim, keepdim, dtype)
        p = 2
    elif p is None:
        p = 2
    p = float(p)
    x = input._data
    if x.dtype.kind != "f":
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. "
            f"Got {dtype_of(input)._legacy}")
    if dtype is not None:
        x = _norm_dtype(input, dtype)
    if x.size == 0 and (p < 0 or p == np.inf):
        _check_norm_identity(x, p, dim)
    all_dims = _is_all(dim)
    dims = tuple(range(x.ndim)) if all_dims else wrap_dims(dim, x.ndim)
    if x.ndim == 0:
        r = RED.reduce_dims(RED.norm_3d, x.reshape(1), (0,), x.dtype, p).reshape(())
    else:
        r = RED.reduce_dims(RED.norm_3d, x, dims, x.dtype, p)
    keep_shape = r.shape
    if not keepdim:
        r = r.reshape(reduced_shape(x.shape, dims, False))
    out = _wrap(r)
    if state.enabled and input._requires_grad:
        saved = (input, r, p, dims, keep_shape if keep_shape != r.shape else None)
        attach(out, LinalgVectorNormBackward0((edge(input),), saved))
    return out


# ========================================================================================
# logsumexp and the softmax family
# ========================================================================================


class LogsumexpBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "result")

    # d/dx log sum exp(x) = exp(x - lse) = softmax(x)
    def _backward(self, g):
        x, result, keep_shape = self._saved
        gd = g._data
        if result.size == 1 and not state.enabled and _hook.TAPE is None:
            xd = x._data
            dt = xd.dtype
            if (dt is result.dtype and dt is gd.dtype and (dt is _F32 or dt is _F64)
                    and gd.size == 1 and xd.__class__ is np.ndarray and gd.__class__ is np.ndarray
                    and result.__class__ is np.ndarray and xd.flags.c_contiguous):
                # one element reduced (a 1-D logsumexp): one kernel call computes what the
                # sub, exp and mul below compute, with the same roundings (bit-identical)
                return (_wrap(flat1(EW.exp_sub_mul, xd, result.item(), gd.item())),)
        if (keep_shape is not None and not state.enabled and result.__class__ is np.ndarray
                and gd.__class__ is np.ndarray):  # no graph: plain reshaped arrays
            r = _wrap(result.reshape(keep_shape))
            g = _wrap(gd.reshape(keep_shape))
        else:
            r = wrap_out(self, result)
            if keep_shape is not None:
                from numgrad.ops.shape import reshape
                r = reshape(r, keep_shape)
                g = _keepdim_view(g, keep_shape)
        return (ew.mul(g, un.exp(ew.sub(x, r))),)


def _lse_all(x, keepdim):
    """An empty ``dim`` list means all dims; PyTorch then fails to squeeze its max away."""
    if x.ndim and x.size and not keepdim:
        ones = ", ".join(["1"] * x.ndim)
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape [{ones}]")


_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_ONE = (1,)
_ONE_ONE = (1, 1)


def logsumexp(input, dim, keepdim=False):
    if dim is None:
        raise TypeError(
            "logsumexp(): argument 'dim' (position 2) must be tuple of ints, not NoneType")
    x = input._data
    if (dim.__class__ is int and x.ndim == 1 and (dim == 0 or dim == -1) and not keepdim
            and (x.dtype is _F32 or x.dtype is _F64) and x.__class__ is np.ndarray
            and x.flags.c_contiguous):
        # a vector's logsumexp (the general path's kernel call, without its dim handling)
        out = np.empty(_ONE_ONE, x.dtype)
        RED.logsumexp_3d(x.reshape(1, x.shape[0], 1), out)
        r = out.reshape(())
        res = _wrap(r)
        if state.enabled and input._requires_grad:
            attach(res, LogsumexpBackward0((edge(input),), (input, r, _ONE)))
        return res
    dt = dtype_of(input)
    if dt._kind != 2:
        x = as_type(input, _dtype.get_default_dtype())
    if _is_all(dim):
        _lse_all(x, keepdim)
        dim = None
    dims = _reduce_dims(dim, x.ndim)
    if not dims:
        r = x.copy()
    else:
        r = RED.reduce_dims(RED.logsumexp_3d, x, dims, x.dtype)
    keep_shape = r.shape
    if not keepdim and dims:
        r = r.reshape(reduced_shape(x.shape, dims, False))
    out = _wrap(r)
    if state.enabled and input._requires_grad:
        attach(out, LogsumexpBackward0(
            (edge(input),), (input, r, keep_shape if keep_shape != r.shape else None)))
    return out


class SoftmaxBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("result", "dim")

    # d softmax: gx = y (g - sum(g y))
    def _backward(self, g):
        result, dim = self._saved
        return (_softmax_backward_data(g, wrap_out(self, result), dim, False),)


class LogSoftmaxBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("result", "dim")

    # d log_softmax: gx = g - exp(y) sum(g)
    def _backward(self, g):
        result, dim = self._saved
        return (_softmax_backward_data(g, wrap_out(self, result), dim, True),)


class SoftmaxBackwardDataBackward0(Node):
    __slots__ = ()

    # f = y (g - <g, y>): df/dg = softmax_bwd(gg, y), df/dy = gg (g - <g, y>) - g <gg, y>
    def _backward(self, gg):
        g, y, dim = self._saved
        s = sum(ew.mul(g, y), dim, keepdim=True)
        t = sum(ew.mul(gg, y), dim, keepdim=True)
        dy = ew.sub(ew.mul(gg, ew.sub(g, s)), ew.mul(g, t))
        return (_softmax_backward_data(gg, y, dim, False), dy)


class LogSoftmaxBackwardDataBackward0(Node):
    __slots__ = ()

    # f = g - e^y sum(g): df/dg = gg - sum(gg e^y), df/dy = -gg e^y sum(g)
    def _backward(self, gg):
        g, y, dim = self._saved
        ey = un.exp(y)
        dg = ew.sub(gg, sum(ew.mul(gg, ey), dim, keepdim=True))
        dy = ew.neg(ew.mul(ew.mul(gg, ey), sum(g, dim, keepdim=True)))
        return (dg, dy)


def _softmax_backward_data(g, y, dim, log):
    kernel = RED.log_softmax_bwd_3d if log else RED.softmax_bwd_3d
    r = RED.along2(kernel, as_type(g, dtype_of(y)), y._data, dim, y._data.dtype)
    out = _wrap(r)
    if state.enabled and (g._requires_grad or y._requires_grad):
        cls = LogSoftmaxBackwardDataBackward0 if log else SoftmaxBackwardDataBackward0
        attach(out, cls((edge(g), edge(y)), (g, y, dim)))
    return out


def _softmax_dtype(input, d, log):
    """PyTorch has no integer softmax kernel: an empty input comes back as is, else it raises."""
    x = input._data
    if x.size == 0:
        return _wrap(_arrays.empty(x, x.shape, x.dtype))
    name = ("log_" if log else "") + ("softmax_lastdim" if d >= x.ndim - 1 else "softmax")
    raise NotImplementedError(
        f'"{name}_kernel_impl" not implemented for \'{dtype_of(input)._legacy}\'')


def _softmax(input, dim, dtype, log):
    x = input._data
    d = wrap_dim(dim, x.ndim)
    dt = dtype_of(input)
    if dtype is not None and _dtype.get(dtype) is not dt:
        from numgrad.ops.shape import to_dtype
        return _softmax(to_dtype(input, dtype), d, None, log)
    if dt._kind != 2:
        return _softmax_dtype(input, d, log)
    if x.ndim == 0:
        from numgrad.ops.shape import reshape
        return reshape(_softmax(reshape(input, (1,)), 0, None, log), ())
    r = RED.along(RED.softmax_3d, x, d, dt.np, log)
    out = _wrap(r)
    if state.enabled and input._requires_grad:
        cls = LogSoftmaxBackward0 if log else SoftmaxBackward0
        attach(out, cls((edge(input),), (r, d)))
    return out


def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``, max-shifted (``SoftmaxBackward0``)."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) along ``dim``, stable for any spread of logits (``LogSoftmaxBackward0``)."""
    return _softmax(input, dim, dtype, True)


# NumPy's spellings (``axis=``, ``keepdims=``), accepted as PyTorch accepts them
_spell_inside = ("sum", "mean")
for _name, _nodes in {
        "sum": ("SumBackward0", "SumBackward1"), "mean": ("MeanBackward0", "MeanBackward1"),
        "max": ("MaxBackward1", "MaxBackward0"), "min": ("MinBackward1", "MinBackward0"),
        "amax": ("AmaxBackward0",), "amin": ("AminBackward0",), "argmax": (), "argmin": (),
        "logsumexp": ("LogsumexpBackward0",), "norm": ("LinalgVectorNormBackward0",),
        "softmax": ("SoftmaxBackward0",), "log_softmax": ("LogSoftmaxBackward0",)}.items():
    _fn = globals()[_name]
    globals()[_name] = declare(_name, nodes=_nodes)(
        _fn if _name in _spell_inside else respell(_fn))
