"""scatter, scatter_reduce and their in-place forms: values written (or reduced) into a copy
of ``input`` at per-position indices along one dim. The checks run on the host before the
kernel of the data's device (``scatter_reduce_dim`` of ``numgrad/kernels/cpu/indexing.py``
and ``numgrad/kernels/cuda/indexing.py``); the derivatives are
numgrad ops (gather, scatter, scatter_add), so they differentiate again."""

import warnings

import numpy as np

from numgrad import _arrays, _device, _dtype
from numgrad._factories import full_like, ones_like
from numgrad._shape import wrap_dim
from numgrad.autograd.graph import Node
from numgrad.kernels._guard import index_error
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops._util import EW, IDX, Tensor, _wrap, attach, dtype_of, edge, is_scalar, state
from numgrad.ops.inplace import apply_
from numgrad.ops.registry import declare, inplace_of

_MODES = {"sum": 1, "prod": 2, "amax": 3, "amin": 4, "mean": 1}
_OLD_MODES = {"add": 1, "multiply": 2}  # scatter(..., reduce=)
_SIGNATURES = (" * (int dim, Tensor index, Tensor src)\n"
               " * (int dim, Tensor index, Tensor src, *, str reduce)\n"
               " * (int dim, Tensor index, Number value)\n"
               " * (int dim, Tensor index, Number value, *, str reduce)\n")
DEPRECATED = ("The reduce argument of torch.scatter with Tensor src is deprecated and will be "
              "removed in a future PyTorch release. Use torch.scatter_reduce instead for more "
              "reduction options.")
_WARNED = [False]
_UNSET = type("_Unset", (), {"__repr__": lambda self: "None"})()  # reduce=None is an error


def _run(s3, i3, o3, count, mode, mean):
    """The kernel on ``o3``'s device (a mean divides by the counts once all are in)."""
    bad = IDX.scatter_reduce_dim(s3, i3, o3, count, mode)
    if bad < 0 and mean:
        IDX.divide_by_count(o3, count, o3.dtype.kind not in "fc")
    return bad


def _scattered(x1, d, idx, src_arr, mode, include_self=True, mean=False):
    """A copy of ``x1`` with ``src_arr`` (index-shaped or larger) reduced in at ``idx``."""
    out_arr = EW.unary(EW.copy, x1, x1.dtype)
    if idx.size == 0:
        return out_arr
    xs, outer, inner = ix._dim_views(out_arr, idx, d)
    o3 = xs.reshape(outer, x1.shape[d], inner)
    s = src_arr[tuple(slice(0, n) for n in idx.shape)]
    s3 = _arrays.contiguous(s).reshape(outer, idx.shape[d], inner)
    count = _arrays.full(o3, o3.shape if mode else (1, 1, 1), 1 if include_self else 0,
                         np.int64)
    bad = _run(s3, idx.reshape(outer, idx.shape[d], inner), o3, count, mode, mean)
    if bad >= 0:
        raise index_error(_arrays.host(idx.reshape(-1))[bad], d, x1.shape[d])
    if not _arrays.shares_memory(o3, out_arr):
        EW.unary(EW.copy, o3.reshape(xs.shape), x1.dtype, out=xs)
    return out_arr


def _check(x1, idx, d, src, what):
    """PyTorch's checks of a scatter's dtypes and shapes (``src`` a tensor or None)."""
    if src is not None and src._data.dtype != x1.dtype:
        raise RuntimeError(f"{what}(): Expected self.dtype to be equal to src.dtype")
    if idx.ndim != x1.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    s = (src._data.shape or (1,)) if src is not None else None
    if s is not None and idx.ndim != len(s):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if idx.size == 0:  # PyTorch checks no sizes against an empty index
        return
    if s is None:
        if any(i != d and n > x1.shape[i] for i, n in enumerate(idx.shape)):
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self "
                               f"{list(x1.shape)} apart from dimension {d}")
    elif any(n > s[i] or (i != d and n > x1.shape[i]) for i, n in enumerate(idx.shape)):
        raise RuntimeError(
            f"Expected index {list(idx.shape)} to be no larger than self {list(x1.shape)} apart "
            f"from dimension {d} and to be no larger size than src {list(s)}")


def _src_data(src):
    a = src._data
    return a.reshape(1) if a.ndim == 0 else a


class ScatterBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "index")

    # d/dself scatter(self, d, idx, src) = g with 0 at idx; d/dsrc = gather(g, d, idx)
    def _backward(self, g):
        dim, index, src_shape = self._saved
        na, nb = self.next_functions
        return (scatter(g, dim, index, 0) if na[0] is not None else None,
                ix._src_grad(ix.gather(g, dim, index), src_shape, "ScatterBackward0")
                if nb[0] is not None else None)


class ScatterBackward1(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "index")

    # d/dself scatter(self, d, idx, value) = g with 0 at idx
    def _backward(self, g):
        dim, index = self._saved
        return (scatter(g, dim, index, 0),)


class _ScatterReduceNoDerivative(ew._NoDerivative):
    __slots__ = ()
    _op = "scatter"


_ScatterReduceNoDerivative.__name__ = _ScatterReduceNoDerivative.__qualname__ = "NotImplemented"


def _type_error(dim, index, src, kwargs):
    names = [type(a).__name__ for a in (dim, index, src)]
    names += [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return TypeError(f"scatter() received an invalid combination of arguments - got "
                     f"({', '.join(names)}), but expected one of:\n" + _SIGNATURES)


@declare(nodes=("ScatterBackward0", "ScatterBackward1", "NotImplemented"))
def scatter(input, dim, index, src=None, value=None, *, reduce=_UNSET):
    """``input`` with ``src`` (a tensor) or ``value`` (a number) written at ``index`` along
    ``dim``; ``reduce='add'|'multiply'`` combines instead (PyTorch's deprecated form)."""
    if src is None:
        src = value
    kwargs = {} if reduce is _UNSET else {"reduce": reduce}
    vt = isinstance(src, Tensor)
    if not vt and not is_scalar(src) or (reduce is not _UNSET and not isinstance(reduce, str)):
        raise _type_error(dim, index, src, kwargs)
    x = input._data
    idx = ix._dim_index(index, x, "scatter")
    x1 = x.reshape(1) if x.ndim == 0 else x
    d = wrap_dim(dim, x1.ndim)
    _check(x1, idx, d, src if vt else None, "scatter")
    mode = 0
    if reduce is not _UNSET:
        if vt and not _WARNED[0]:  # once per process, as PyTorch
            _WARNED[0] = True
            warnings.warn(DEPRECATED, UserWarning, stacklevel=2)
        if reduce not in _OLD_MODES:
            raise RuntimeError("reduce argument must be either add or multiply.")
        mode = _OLD_MODES[reduce]
    if vt:
        s_arr = _src_data(src)
        if s_arr.__class__ is not x.__class__:
            s_arr = _arrays.to_device(s_arr, _device.of(x))
    else:
        dt = dtype_of(input)
        s_arr = _arrays.full(x, idx.shape, _dtype.checked_scalar(src, dt), dt.np)
    r = _wrap(_scattered(x1, d, idx, s_arr, mode).reshape(x.shape))
    grads = input._requires_grad or (vt and src._requires_grad)
    if state.enabled and grads and x.dtype.kind in "fc":
        if mode:
            node = _ScatterReduceNoDerivative((edge(input), edge(src)) if vt else (edge(input),))
        elif vt:
            node = ScatterBackward0((edge(input), edge(src)), (d, index, src._data.shape))
        else:
            node = ScatterBackward1((edge(input),), (d, index))
        attach(r, node)
    return r


@inplace_of("scatter")
def scatter_(self, dim, index, src=None, value=None, *, reduce=_UNSET):
    # src goes through apply_ so that a src requiring grad records the node
    return apply_(self, lambda x, s: scatter(x, dim, index, s, value, reduce=reduce), src)


@inplace_of("scatter_add")
def scatter_add_(self, dim, index, src):
    return apply_(self, lambda x, s: ix.scatter_add(x, dim, index, s), src)


class ScatterReduceBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "include_self", "index", "reduce", "self", "src", "result")

    def _backward(self, g):
        dim, include_self, index, reduce, x, src, result = self._saved
        gs, gsrc = _reduce_grads(g, dim, index, reduce, include_self, x, src, result)
        if not include_self:
            # self's values at the scattered slots were not part of the reduction
            gs = scatter(gs, dim, index, 0)
        na, nb = self.next_functions
        return (gs if na[0] is not None else None,
                ix._src_grad(gsrc, src._data.shape, "ScatterReduceBackward0")
                if nb[0] is not None else None)


def _reduce_grads(g, dim, index, reduce, include_self, x, src, result):
    """The gradients of scatter_reduce for self and src (src's index-shaped)."""
    if reduce == "sum":
        # d/dself = g; d/dsrc = gather(g)
        return g, ix.gather(g, dim, index)
    if reduce == "mean":
        # d/dself = g / n; d/dsrc = gather(g / n), n the number of values averaged in a slot
        n = ix.scatter_add(full_like(g, 1 if include_self else 0), dim, index, ones_like(src))
        n = n.masked_fill(n.eq(0), 1)
        gn = ew.div(g, n)
        return gn, ix.gather(gn, dim, index)
    if reduce == "prod":
        # d/dself = g * prod(others); zeros masked out so one zero does not cancel the rest
        masked_self = x.masked_fill(x.eq(0), 1)
        masked_result = scatter_reduce(masked_self, dim, index, src, "prod",
                                       include_self=include_self)
        gs = ew.div(ew.mul(g, masked_result), masked_self)
        src_zero = src.eq(0)
        zeros = ew.mul(x, 0)
        n_zeros = ix.gather(ix.scatter_add(zeros, dim, index, src_zero.to(x.dtype)), dim, index)
        single = src_zero.logical_and(n_zeros.eq(1))
        masked_src_result = scatter_reduce(x, dim, index, src.masked_fill(single, 1), "prod",
                                           include_self=include_self)
        gsrc = ew.where(single, ix.gather(ew.mul(g, masked_src_result), dim, index),
                        ew.div(ix.gather(ew.mul(g, result), dim, index),
                               src.masked_fill(src_zero, 1)))
        return gs, gsrc
    # amax/amin: g split evenly between the values equal to the result
    value = ix.gather(result, dim, index)
    self_is = x.eq(result).to(x.dtype)
    src_is = src.eq(value).to(x.dtype)
    n = ix.scatter_add(self_is, dim, index, src_is)
    gd = ew.div(g, n)
    return ew.mul(self_is, gd), ew.mul(src_is, ix.gather(gd, dim, index))


@declare(nodes=("ScatterReduceBackward0",))
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with ``src`` reduced in at ``index`` along ``dim`` by ``reduce`` ('sum',
    'prod', 'mean', 'amax', 'amin'); ``include_self=False`` leaves self's values out of the
    slots that receive any."""
    if not isinstance(src, Tensor):
        raise TypeError("scatter_reduce(): argument 'src' (position 3) must be Tensor, not "
                        f"{type(src).__name__}")
    x = input._data
    idx = ix._dim_index(index, x, "scatter_reduce")
    x1 = x.reshape(1) if x.ndim == 0 else x
    d = wrap_dim(dim, x1.ndim)
    _check(x1, idx, d, src, "scatter")
    if reduce not in _MODES:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if reduce == "mean" and x.dtype == np.bool_:
        raise NotImplementedError(
            "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    s_arr = _src_data(src)
    if s_arr.__class__ is not x.__class__:
        s_arr = _arrays.to_device(s_arr, _device.of(x))
    out = _scattered(x1, d, idx, s_arr, _MODES[reduce], include_self, reduce == "mean")
    r = _wrap(out.reshape(x.shape))
    if state.enabled and (input._requires_grad or src._requires_grad) and x.dtype.kind in "fc":
        # self and src kept attached (double backward); the result detached (no cycle)
        saved = (d, include_self, index, reduce, input, src, r.detach())
        attach(r, ScatterReduceBackward0((edge(input), edge(src)), saved))
    return r


@inplace_of("scatter_reduce")
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    return apply_(self, lambda x, s: scatter_reduce(x, dim, index, s, reduce,
                                                    include_self=include_self), src)


__all__ = ["scatter", "scatter_", "scatter_add_", "scatter_reduce", "scatter_reduce_"]
