"""Selection, counting and comparison ops: ``topk``, ``kthvalue``, ``median``/``nanmedian``,
``mode``, ``cummax``/``cummin`` (the kernels of ``numgrad.kernels.cpu.selection``, which pick
PyTorch's index among ties), ``all``/``any``/``count_nonzero`` over dims, ``unique``,
``unique_consecutive``, ``histc`` and ``histogram``.

The line kernels and the histogram run on the host: CUDA data is copied there and the results
back (the result's size or its edges depend on the values, as for ``nonzero``)."""

import math

import numpy as np

from numgrad import _arrays, _device, _dtype
from numgrad._shape import reduced_shape, wrap_dim
from numgrad.autograd.grad_mode import no_grad
from numgrad.kernels import LazyKernels
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops._util import Tensor, _wrap, attach, dtype_of, edge, state
from numgrad.ops.lines import _check_int, _check_tensor, _line_view, _sort_backward, sort
from numgrad.ops.registry import declare, op, respell

SEL = LazyKernels("selection")

topk_return = red._return_type("topk")
kthvalue_return = red._return_type("kthvalue")
median_return = red._return_type("median")
nanmedian_return = red._return_type("nanmedian")
mode_return = red._return_type("mode")
cummax_return = red._return_type("cummax")
cummin_return = red._return_type("cummin")


class _HistogramReturn(tuple):
    """(hist, bin_edges), printed like ``torch.return_types.histogram``."""

    __slots__ = ()

    def __new__(cls, hist, bin_edges):
        return tuple.__new__(cls, (hist, bin_edges))

    hist = property(lambda self: self[0])
    bin_edges = property(lambda self: self[1])

    def __repr__(self):
        return f"torch.return_types.histogram(\nhist={self[0]!r},\nbin_edges={self[1]!r})"


histogram_return = type("histogram", (_HistogramReturn,), {"__slots__": ()})
_NO_DIM = object()


# ----------------------------------------------------------------------------------------
# line kernels
# ----------------------------------------------------------------------------------------


def _run_lines(input, d, m, kernel, *args):
    """``kernel(x3, values, indices, *args)`` over the lines of ``input`` along ``d``, with
    ``m`` results per line: (values, indices) shaped as ``input`` with dim ``d`` of size m."""
    x = input._data
    host = _arrays.host(x)
    is_bool = host.dtype == np.bool_
    x3 = _line_view(host.view(np.uint8) if is_bool else host, d)
    vals = _arrays.new((x3.shape[0], m, x3.shape[2]), x3.dtype)
    idx = _arrays.new(vals.shape, np.int64)
    if vals.size:
        kernel(x3, vals, idx, *args)
    shape = list(x.shape)
    if shape:
        shape[d] = m
    vals = vals.reshape(shape)
    idx = idx.reshape(shape)
    if is_bool:
        vals = vals.view(np.bool_)
    dev = _device.of(x)
    return _arrays.to_device(vals, dev), _arrays.to_device(idx, dev)


def _reduced(arr, d, keepdim):
    """``arr`` (dim ``d`` of size 1) without that dim unless ``keepdim``."""
    if keepdim or arr.ndim == 0:
        return arr
    return arr.reshape(reduced_shape(arr.shape, (d,), False))


def _select_backward(grad, dim, keepdim, indices, self_sym_sizes):
    """The gradient of each selected value goes back to the position it was taken from."""
    if not self_sym_sizes:
        return ew.add(grad, 0.0)
    d = wrap_dim(dim, len(self_sym_sizes))
    return red._scatter_along(grad, indices, tuple(self_sym_sizes), d, keepdim)


def _dim_of(input, dim, fn, pos=3):
    _check_tensor(input, fn)
    _check_int(dim, fn, "dim", pos)
    return wrap_dim(dim, input._data.ndim)


def _check_nonempty_dim(input, d, fn):
    x = input._data
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"{fn}(): Expected reduction dim {d} to have non-zero size.")


_SAVE = ("self_sym_sizes", "dim", "keepdim", "indices")


def _select_grads(grad, self_sym_sizes, dim, keepdim, indices):
    return _select_backward(grad, dim, keepdim, indices, self_sym_sizes)


# d/dx topk(x) = 1 at each selected position: grad scattered back to the indices
@op(node="TopkBackward0", outputs=topk_return, save=("self_sym_sizes", "dim", "indices"),
    grads={"self": lambda grad, self_sym_sizes, dim, indices: _sort_backward(
        grad, dim, indices, self_sym_sizes)})
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):  # noqa: A002
    """The ``k`` largest (``largest=False``: smallest) values along ``dim`` and their indices;
    NaN counts as larger than any number, ties are broken as PyTorch's CPU kernel does."""
    _check_tensor(input, "topk")
    _check_int(k, "topk", "k", 2)
    d = _dim_of(input, dim, "topk")
    x = input._data
    if x.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    n = x.shape[d] if x.ndim else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    if x.ndim == 0:  # PyTorch returns the element itself, for k = 0 as well
        vals, idx = _run_lines(input, 0, 1, SEL.topk_3d, 1, True, True)
    else:
        vals, idx = _run_lines(input, d, int(k), SEL.topk_3d, int(k), bool(largest),
                               bool(sorted))
    return (vals, idx), {"dim": int(dim), "indices": idx, "self_sym_sizes": tuple(x.shape)}


# d/dx kthvalue(x) = 1 at the selected position along dim
@op(node="KthvalueBackward0", outputs=kthvalue_return, save=_SAVE, grads={"self": _select_grads})
@respell
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest value along ``dim`` (1-based) and its index."""
    _check_tensor(input, "kthvalue")
    _check_int(k, "kthvalue", "k", 2)
    d = _dim_of(input, dim, "kthvalue")
    _check_nonempty_dim(input, d, "kthvalue")
    x = input._data
    n = x.shape[d] if x.ndim else 1
    if not 1 <= k <= n:  # checked on an empty tensor too, as PyTorch does
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    vals, idx = _run_lines(input, d, 1, SEL.kthvalue_3d, int(k))
    vals, idx = _reduced(vals, d, keepdim), _reduced(idx, d, keepdim)
    return (vals, idx), {"dim": int(dim), "keepdim": bool(keepdim), "indices": idx,
                         "self_sym_sizes": tuple(x.shape)}


# d/dx mode(x) = 1 at the reported position of the most frequent value
@op(node="ModeBackward0", outputs=mode_return, save=_SAVE, grads={"self": _select_grads})
@respell
def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and an
    index where it occurs (PyTorch's)."""
    d = _dim_of(input, dim, "mode", 2)
    _check_nonempty_dim(input, d, "mode")
    if input._data.ndim == 0 or input._data.size == 0:
        vals, idx = _run_lines(input, d, 1, SEL.kthvalue_3d, 1)
    else:
        vals, idx = _run_lines(input, d, 1, SEL.mode_3d)
    vals, idx = _reduced(vals, d, keepdim), _reduced(idx, d, keepdim)
    return (vals, idx), {"dim": int(dim), "keepdim": bool(keepdim), "indices": idx,
                         "self_sym_sizes": tuple(input.shape)}


def _cum_backward(grad, dim, indices, self_sym_sizes):
    if not self_sym_sizes:
        return ew.add(grad, 0.0)
    return _sort_backward(grad, dim, indices, self_sym_sizes)


def _cumextreme(input, dim, largest, fn):
    if dim is _NO_DIM:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "dim"')
    d = _dim_of(input, dim, fn, 2)
    x = input._data
    vals, idx = _run_lines(input, d, x.shape[d] if x.ndim else 1, SEL.cumextreme_3d, largest)
    return (vals, idx), {"dim": int(dim), "indices": idx}


# d/dx_j cummax(x)_i = [j is where the running max was attained]: grad summed back there
@op(node="CummaxBackward0", outputs=cummax_return, save=("self", "dim", "indices"),
    grads={"self": lambda grad, self, dim, indices: _cum_backward(
        grad, dim, indices, tuple(self.shape))})
@respell
def cummax(input, dim=_NO_DIM, *, out=None):
    """Running maximum along ``dim`` and the index where each was (last) attained."""
    return _cumextreme(input, dim, True, "cummax")


# d/dx_j cummin(x)_i = [j is where the running min was attained]: grad summed back there
@op(node="CumminBackward0", outputs=cummin_return, save=("self", "dim", "indices"),
    grads={"self": lambda grad, self, dim, indices: _cum_backward(
        grad, dim, indices, tuple(self.shape))})
@respell
def cummin(input, dim=_NO_DIM, *, out=None):
    """Running minimum along ``dim`` and the index where each was (last) attained."""
    return _cumextreme(input, dim, False, "cummin")


# ----------------------------------------------------------------------------------------
# median, nanmedian
# ----------------------------------------------------------------------------------------


MedianBackward0 = red._named("MedianBackward0", red.EvenlyDistributedBackward)
NanmedianBackward0 = red._named("NanmedianBackward0", red.EvenlyDistributedBackward)
MedianBackward1 = type("MedianBackward1", (red.MaxBackward0,), {"__slots__": ()})
NanmedianBackward1 = type("NanmedianBackward1", (red.MaxBackward0,), {"__slots__": ()})


def _median(input, dim, keepdim, skip_nan, fn):
    _check_tensor(input, fn)
    x = input._data
    if x.dtype == np.bool_:
        raise NotImplementedError(f'"{fn}_cpu" not implemented for \'Bool\'')
    if dim is None:
        if x.size == 0:
            r = _wrap(_arrays.to_device(np.full((), np.nan, x.dtype), _device.of(x)))
            return r
        flat = _wrap(_arrays.contiguous(x).reshape(-1))
        vals, _ = _run_lines(flat, 0, 1, SEL.median_3d, skip_nan)
        out = _wrap(vals.reshape(()))
        if state.enabled and input._requires_grad:
            node = (NanmedianBackward0 if skip_nan else MedianBackward0)
            attach(out, node((edge(input),), (input, out._data, None, None)))
        return out
    d = _dim_of(input, dim, fn, 2)
    _check_nonempty_dim(input, d, fn)
    vals, idx = _run_lines(input, d, 1, SEL.median_3d, skip_nan)
    vals, idx = _reduced(vals, d, keepdim), _reduced(idx, d, keepdim)
    values = _wrap(vals)
    if state.enabled and input._requires_grad and x.ndim:
        node = NanmedianBackward1 if skip_nan else MedianBackward1
        attach(values, node((edge(input),), (idx, x.shape, d, bool(keepdim))))
    elif state.enabled and input._requires_grad:
        values = ew.add(input, 0.0)  # a 0-d input: its value itself
    ret = nanmedian_return if skip_nan else median_return
    return ret(values, _wrap(idx))


# d/dx median(x) = [x == median] / #[x == median]; along dim: 1 at the median's index
@declare(nodes=("MedianBackward0", "MedianBackward1"))
@respell
def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median of all values (NaN if any is NaN), or along ``dim`` with its index."""
    return _median(input, dim, keepdim, False, "median")


# d/dx nanmedian(x) = [x == median] / #[x == median]; along dim: 1 at the median's index
@declare(nodes=("NanmedianBackward0", "NanmedianBackward1"))
@respell
def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """``median`` ignoring NaN values (NaN only when all are NaN)."""
    return _median(input, dim, keepdim, True, "nanmedian")


# ----------------------------------------------------------------------------------------
# all, any, count_nonzero (reductions of x != 0, composed of reduction kernels)
# ----------------------------------------------------------------------------------------


def _count(input, dim, keepdim, zeros, fn):
    """How many elements are zero (``zeros``) or nonzero over ``dim``, in int64."""
    _check_tensor(input, fn)
    with no_grad():
        x = input.detach()
        flags = ew.eq(x, 0) if zeros else ew.ne(x, 0)
        if isinstance(dim, (tuple, list)) and len(dim) == 0:  # no dim reduced
            if input._data.ndim:
                return ew.add(flags.to(_dtype.int64), 0), True
            dim = None
        return red.sum(flags, dim, keepdim=bool(keepdim)), False


def _truth(input, dim, keepdim, every, fn):
    counts, _ = _count(input, dim, keepdim, every, fn)
    with no_grad():
        r = ew.eq(counts, 0) if every else ew.ne(counts, 0)
        if dtype_of(input) is _dtype.uint8:  # PyTorch keeps uint8 for uint8 input
            r = r.to(_dtype.uint8)
    return r


@declare()
@respell
def all(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """Whether every element is nonzero, over all elements or over ``dim`` (int or tuple)."""
    return _truth(input, dim, keepdim, True, "all")


@declare()
@respell
def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """Whether any element is nonzero, over all elements or over ``dim`` (int or tuple)."""
    return _truth(input, dim, keepdim, False, "any")


@declare()
@respell
def count_nonzero(input, dim=None):
    """The number of nonzero elements (int64), over all elements or over ``dim``."""
    counts, _ = _count(input, dim, False, False, "count_nonzero")
    return counts


# ----------------------------------------------------------------------------------------
# unique, unique_consecutive (composed of sort, comparisons, cumsum, masks)
# ----------------------------------------------------------------------------------------


def _factory(name):
    from numgrad import _factories
    return getattr(_factories, name)


def _rows(x, d):
    """``x`` with dim ``d`` first, as (n, rest) rows; the shape of the moved tensor."""
    from numgrad.ops.shape import movedim
    moved = movedim(x, d, 0).contiguous()
    return moved.reshape(moved.shape[0], -1), tuple(moved.shape)


def _new_group(a):
    """Bool per row (or element): whether it differs from the one before (the first does)."""
    n = a.shape[0]
    first = _factory("ones")(min(n, 1), dtype=_dtype.bool_, device=a.device)
    if n < 2:
        return first[:n]
    diff = ew.ne(a[1:], a[:-1])
    if diff.dim() > 1:
        diff = any(diff, 1)
    from numgrad.ops.shape import cat
    return cat([first, diff])


def _groups(values, order, return_inverse, return_counts, inverse_shape):
    """Unique rows of ``values`` (consecutive equal rows merged), the group of each original
    element (``order[j]``: where sorted row j came from) and the group sizes."""
    from numgrad.ops.indexing import nonzero, scatter_add
    from numgrad.ops.lines import cumsum
    from numgrad.ops.shape import cat
    n = values.shape[0]
    new = _new_group(values)
    uniq = values[new]
    inverse = counts = None
    if return_inverse:
        group = ew.sub(cumsum(new, 0), 1)
        if order is not None:
            z = _factory("zeros")(n, dtype=_dtype.int64, device=values.device)
            group = scatter_add(z, 0, order, group)
        inverse = group.reshape(inverse_shape)
    if return_counts:
        starts = nonzero(new).reshape(-1)
        end = _factory("tensor")([n], dtype=_dtype.int64, device=values.device)
        counts = ew.sub(cat([starts[1:], end]), starts)
    return uniq, inverse, counts


def _lexsort(rows):
    """Positions that sort ``rows`` (n, m) lexicographically (stable)."""
    n, m = rows.shape
    perm = _factory("arange")(n, device=rows.device)
    for c in range(m - 1, -1, -1):
        order = sort(rows[:, c][perm], stable=True).indices
        perm = perm[order]
    return perm


def _unique(input, sorted_, return_inverse, return_counts, dim, consecutive, fn):
    _check_tensor(input, fn)
    with no_grad():
        x = input.detach()
        if dim is None:
            flat = x.reshape(-1)
            if consecutive:
                values, order = flat, None
            else:
                values, order = sort(flat, stable=True)
            uniq, inv, cnt = _groups(values, order, return_inverse, return_counts, x.shape)
        else:
            d = wrap_dim(dim, x.dim())
            shape = tuple(x.shape)
            if x.dim() == 0:
                shape, d = (1,), 0
                x = x.reshape(1)
            if shape[d] == 0:
                uniq, inv, cnt = x, _factory("zeros")(0, dtype=_dtype.int64), \
                    _factory("zeros")(0, dtype=_dtype.int64)
            else:
                if 0 in shape:
                    raise RuntimeError("There are 0 sized dimensions, and they aren't selected, "
                                       "so unique cannot be applied")
                rows, moved = _rows(x, d)
                order = None if consecutive else _lexsort(rows)
                values = rows if order is None else rows[order]
                uniq, inv, cnt = _groups(values, order, return_inverse, return_counts,
                                         (shape[d],))
                from numgrad.ops.shape import movedim
                uniq = movedim(uniq.reshape((uniq.shape[0],) + moved[1:]), 0, d)
    out = [uniq]
    if return_inverse:
        out.append(inv)
    if return_counts:
        out.append(cnt)
    return out[0] if len(out) == 1 else tuple(out)


@declare()
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (sorted; NaNs are all distinct), or distinct slices along ``dim``,
    with the index of each element's value (``return_inverse``) and how often each occurs."""
    return _unique(input, sorted, return_inverse, return_counts, dim, False, "unique")


@declare()
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``unique`` of runs of equal consecutive values (or slices along ``dim``)."""
    return _unique(input, True, return_inverse, return_counts, dim, True, "unique_consecutive")


# ----------------------------------------------------------------------------------------
# histc, histogram
# ----------------------------------------------------------------------------------------


def _fmt(v):
    """A number as C++ streams print a double (PyTorch's messages)."""
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return f"{v:g}"


def _check_float(input, what):
    dt = dtype_of(input)
    if dt._kind != 2:
        raise NotImplementedError(f'"{what}" not implemented for \'{dt._legacy}\'')


def _check_bins(bins):
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")


def _edges(lo, hi, bins, dt):
    """``linspace(lo, hi, bins + 1)`` in dtype ``dt`` with PyTorch's formula (PyTorch's
    vectorized loop can round blocks of 32 or more float32 edges 1 ulp differently)."""
    e = _arrays.new(bins + 1, dt)
    SEL.linspace_into(e, dt.type(lo), dt.type(hi), _arrays.constant(np.arange(bins + 1, dtype=dt)))
    return e


def _edges_of(bins, dt):
    return np.ascontiguousarray(bins).astype(dt, copy=True)


_edges_of.pure = True


def _count_into(x, w, edges, how):
    counts = _arrays.zeros(x, edges.size - 1, x.dtype)
    flat = _arrays.contiguous(x).reshape(-1)
    weights = np.empty(0, x.dtype) if w is None else _arrays.contiguous(w).reshape(-1)
    SEL.histogram(flat, weights, edges, counts, how, x.dtype.type(edges.size - 1))
    return counts


@declare()
def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002
    """Counts of the values in ``bins`` equal bins over [min, max] (the data's range when
    ``min == max``); values outside are ignored."""
    _check_tensor(input, "histc")
    _check_int(bins, "histc", "bins", 2)
    _check_float(input, "histogram_cpu")
    _check_bins(bins)
    x = _arrays.host(input._data)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        with no_grad():
            lo = float(_arrays.item(red.amin(input.detach())._data))
            hi = float(_arrays.item(red.amax(input.detach())._data))
        # the extrema of data holding NaN are the processor's default NaN, printed "-nan"
        lo, hi = (-abs(v) if math.isnan(v) else v for v in (lo, hi))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_fmt(lo)}, {_fmt(hi)}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    edges = _arrays.constant(np.array([lo, hi], x.dtype))  # lo, hi: numbers the trace guards
    counts = _arrays.zeros(x, bins, x.dtype)
    flat = _arrays.contiguous(x).reshape(-1)
    SEL.histogram(flat, np.empty(0, x.dtype), edges, counts, 0, x.dtype.type(bins))
    return _wrap(_arrays.to_device(counts, _device.of(input._data)))


@declare(variants=("function",))
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """(hist, bin_edges): counts (or summed ``weight``) of the values in ``bins`` equal bins
    over ``range`` (default: the data's range), or in the bins between the edges of a tensor
    ``bins``; ``density`` divides by the total and the bin widths."""
    _check_tensor(input, "histogram")
    _check_float(input, "histogramdd")
    x = _arrays.host(input._data)
    dt = x.dtype
    w = None
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided it should have the same shape "
                "as the input tensor excluding its innermost dimension, but got input with "
                f"shape [{x.size}, 1] and weight with shape {list(weight.shape)}")
        if weight._data.dtype != dt:
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                f"should have the same dtype, but got input({dtype_of(input)._legacy.lower()}), "
                f"and weight({dtype_of(weight)._legacy.lower()})")
        w = _arrays.host(weight._data)
    if isinstance(bins, Tensor):
        if bins.dim() != 1:
            raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but got "
                               f"{bins.dim()} dimensions in the bins tensor for dimension 0")
        _check_bins(bins.shape[0] - 1)
        edges = _arrays.host_step(_edges_of, _arrays.host(bins._data), dt)
        how = 2
    else:
        _check_int(bins, "histogram", "bins", 2)
        _check_bins(bins)
        lo, hi = 0.0, 1.0
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.size:
            with no_grad():
                lo = float(_arrays.item(red.amin(input.detach())._data))
                hi = float(_arrays.item(red.amax(input.detach())._data))
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{_fmt(lo)}, {_fmt(hi)}]"
                               " is not finite")
        if lo > hi:
            raise RuntimeError("torch.histogramdd: min should not exceed max, but got min "
                               f"{_fmt(lo)} max {_fmt(hi)} for dimension 0")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _edges(lo, hi, bins, dt)
        how = 1
    counts = _count_into(x, w, edges, how)
    dev = _device.of(input._data)
    hist = _wrap(_arrays.to_device(counts, dev))
    bin_edges = _wrap(_arrays.to_device(edges, dev))
    if density:
        with no_grad():
            total = red.sum(hist)
            hist = ew.div(ew.div(hist, total), ew.sub(bin_edges[1:], bin_edges[:-1]))
    return histogram_return(hist, bin_edges)
