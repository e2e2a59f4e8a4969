"""Indexing: ``x[key]`` and ``x[key] = v`` with ints, slices (steps), None, ``...``, integer
lists/arrays/tensors and boolean masks; ``index_select``, ``gather``, ``nonzero``.

Basic parts of a key become select/slice/unsqueeze views, in PyTorch's order and with its
node names; the advanced parts then run as one gather (``IndexBackward0``) through a plan
that views the input as (outer, indexed, inner) and linearizes the index arrays.
"""

import operator

import numpy as np

from numgrad import _arrays, _device, _dtype
from numgrad._shape import broadcast_shapes, wrap_dim
from numgrad.autograd.graph import Node
from numgrad.kernels._guard import check_writable, expand_error, index_error
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, IDX, Tensor, _wrap, as_type, attach, dtype_of, edge, state


def _is_int(k):
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _is_int_scalar_tensor(k):
    return isinstance(k, Tensor) and k._data.ndim == 0 and k._data.dtype.kind in "iu"


def _advanced_array(k):
    if isinstance(k, Tensor):
        a = _arrays.host(k._data)  # plans are built (and indices checked) on the host
    else:
        a = np.asarray(k)
        if a.dtype == object:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(np.int64)
    if a.dtype.kind not in "iub":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if a.dtype == np.uint8 and isinstance(k, Tensor):
        a = a.astype(np.bool_)
    return a


def _check_step(step):
    if step is not None and step <= 0:
        raise ValueError("slice step cannot be zero" if step == 0 else
                         "step must be greater than zero")


def _parse(key, ndim):
    """Classify key items; returns [(kind, value)] with Ellipsis expanded to a dim count."""
    single = not isinstance(key, tuple)
    items = [key] if single else list(key)
    parsed = []
    used = 0
    ellipsis = False
    for k in items:
        if k is None:
            parsed.append(("none", None))
        elif k is Ellipsis:
            if ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis = True
            parsed.append(("ellipsis", None))
        elif isinstance(k, (bool, np.bool_)):
            raise IndexError("boolean scalar indices are not supported by numgrad")
        elif _is_int(k) or _is_int_scalar_tensor(k):
            parsed.append(("int", operator.index(k)))
            used += 1
        elif isinstance(k, slice):
            parsed.append(("slice", k))
            used += 1
        elif isinstance(k, (float, np.floating, complex)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(k).__name__})")
        elif isinstance(k, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(k).__name__}'")
        else:
            a = _advanced_array(k)
            parsed.append(("adv", a))
            used += a.ndim if a.dtype == np.bool_ else 1
    if used > ndim:
        if ndim == 0 and any(kind == "int" for kind, _ in parsed):
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    for kind, v in parsed:
        out.append((kind, ndim - used if kind == "ellipsis" else v))
    return out, single


def getitem(x, key):
    """``x[key]`` with PyTorch's semantics and node names."""
    parsed, single = _parse(key, x._data.ndim)
    r = x
    dim = 0  # position in the result so far
    src = 0  # position in x (for error messages)
    adv = []
    for kind, v in parsed:
        if kind == "int":
            size = r._data.shape[dim]
            if v < -size or v >= size:
                raise IndexError(
                    f"index {v} is out of bounds for dimension {src} with size {size}")
            r = sh.select(r, dim, v, _key=True)
            src += 1
        elif kind == "slice":
            if single or v != slice(None):
                _check_step(v.step)
                r = sh.slice_dim(r, dim, v.start, v.stop, v.step)
            dim += 1
            src += 1
        elif kind == "none":
            r = sh.unsqueeze(r, dim)
            dim += 1
        elif kind == "ellipsis":
            dim += v
            src += v
        else:
            adv.append((dim, v))
            k = v.ndim if v.dtype == np.bool_ else 1
            dim += k
            src += k
    if adv:
        r = _index(r, adv)
    elif r is x:
        r = sh.view_of(x, x._data)  # x[...] is a new view, like PyTorch's alias
    return r


# ========================================================================================
# advanced indexing through a gather plan
# ========================================================================================


class _Plan:
    """How an advanced index maps ``x`` (shape ``in_shape``) to the result.

    ``perm`` moves the indexed dims together (None when already adjacent), ``start`` is
    where they begin after that, ``flat`` holds the linearized indices and ``out_shape`` the
    result's shape. Gather and its adjoint (scatter-add) both run from the plan.
    """

    __slots__ = ("in_shape", "perm", "start", "k", "flat", "out_shape", "outer", "n", "inner",
                 "_flat_dev")

    def permuted(self, arr):
        return arr if self.perm is None else arr.transpose(self.perm)

    def flat_for(self, arr):
        """The linearized indices on ``arr``'s device (copied to a GPU once per plan)."""
        if arr.__class__ is np.ndarray:
            return self.flat
        if self._flat_dev is None:
            self._flat_dev = arr.__class__.from_host(self.flat)
        return self._flat_dev


def _plan(x_shape, adv, wrap=True):
    ndim = len(x_shape)
    dims = []
    arrays = []
    for d, a in adv:
        if a.dtype == np.bool_:
            k = a.ndim
            mshape = x_shape[d:d + k]
            if tuple(a.shape) != tuple(mshape):
                bad = next(i for i in range(k) if i >= len(mshape) or a.shape[i] != mshape[i])
                raise IndexError(
                    f"The shape of the mask {list(a.shape)} at index {bad} does not match the "
                    f"shape of the indexed tensor {list(x_shape)} at index {d + bad}")
            pos = IDX.mask_positions(np.ascontiguousarray(a).reshape(-1))
            multi = np.empty((max(k, 1), pos.size), np.int64)
            if k:
                IDX.unravel(pos, np.asarray(mshape, np.int64), multi)
            for j in range(k):
                dims.append(d + j)
                arrays.append(multi[j])
        else:
            dims.append(d)
            arrays.append(a.astype(np.int64, copy=False))
    try:
        bshape = ()
        for a in arrays:
            bshape = broadcast_shapes(bshape, a.shape)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         f"shapes {', '.join(str(list(a.shape)) for a in arrays)}") from None
    m = 1
    for s in bshape:
        m *= s
    k = len(dims)
    idx = np.empty((k, m), np.int64)
    for j, a in enumerate(arrays):
        idx[j] = np.broadcast_to(a, bshape).reshape(-1)
    sizes = np.asarray([x_shape[d] for d in dims], np.int64)
    flat = np.empty(m, np.int64)
    bad_row, bad_col = IDX.linearize(idx, sizes, flat, wrap)
    if bad_row >= 0:
        if not wrap:
            raise IndexError("index out of range in self")
        raise IndexError(f"index {idx[bad_row, bad_col]} is out of bounds for dimension "
                         f"{bad_row} with size {sizes[bad_row]}")
    plan = _Plan()
    plan._flat_dev = None
    plan.in_shape = tuple(x_shape)
    plan.k = k
    plan.flat = flat
    adjacent = all(dims[j + 1] == dims[j] + 1 for j in range(k - 1))
    if adjacent:
        plan.perm = None
        plan.start = dims[0]
        pshape = x_shape
    else:
        rest = [d for d in range(ndim) if d not in dims]
        plan.perm = tuple(dims + rest)
        plan.start = 0
        pshape = tuple(x_shape[d] for d in plan.perm)
    s = plan.start
    plan.outer = int(np.prod(pshape[:s], dtype=np.int64))
    plan.n = int(np.prod(pshape[s:s + k], dtype=np.int64))
    plan.inner = int(np.prod(pshape[s + k:], dtype=np.int64))
    plan.out_shape = tuple(pshape[:s]) + tuple(bshape) + tuple(pshape[s + k:])
    return plan


def _gather(arr, plan):
    x3 = plan.permuted(arr).reshape(plan.outer, plan.n, plan.inner)
    out = _arrays.empty(arr, (plan.outer, plan.flat.size, plan.inner), arr.dtype)
    if out.size:
        IDX.on(arr).gather_axis(x3, plan.flat_for(arr), out)
    return out.reshape(plan.out_shape)


def _scatter_add(g_arr, plan):
    out = _arrays.zeros(g_arr, (plan.outer, plan.n, plan.inner), g_arr.dtype)
    g3 = g_arr.reshape(plan.outer, plan.flat.size, plan.inner)
    if g3.size:
        IDX.on(g_arr).scatter_add_axis(g3, plan.flat_for(g_arr), out)
    pshape = plan.in_shape if plan.perm is None else tuple(plan.in_shape[d] for d in plan.perm)
    out = out.reshape(pshape)
    if plan.perm is not None:
        out = out.transpose(np.argsort(plan.perm))
    return out


class IndexBackward0(Node):
    __slots__ = ()

    # d/dx x[idx] = zeros with g added at idx (repeated indices accumulate)
    def _backward(self, g):
        return (_index_scatter(g, self._saved[0]),)


class IndexScatterBackward(Node):
    __slots__ = ()

    # d/dg scatter_add(g, idx) = gg[idx]
    def _backward(self, gg):
        return (_index_gather(gg, self._saved[0]),)


def _index_gather(x, plan, node_cls=IndexBackward0):
    out = _wrap(_gather(x._data, plan))
    if state.enabled and x._requires_grad:
        attach(out, node_cls((edge(x),), (plan,)))
    return out


def _index_scatter(g, plan):
    out = _wrap(_scatter_add(g._data, plan))
    if state.enabled and g._requires_grad:
        attach(out, IndexScatterBackward((edge(g),), (plan,)))
    return out


def _index(x, adv):
    return _index_gather(x, _plan(x._data.shape, adv))


class IndexSelectBackward0(IndexBackward0):
    __slots__ = ()


def index_select(input, dim, index):
    if not isinstance(index, Tensor) or index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    x = input if input._data.ndim else sh.reshape(input, (1,))
    d = wrap_dim(dim, x._data.ndim)
    a = _advanced_array(index)
    if a.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    r = _index_gather(x, _plan(x._data.shape, [(d, a.reshape(-1))], wrap=False),
                      IndexSelectBackward0)
    return r if input._data.ndim else sh.reshape(r, index._data.shape)


def masked_select(input, mask):
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask._data.shape, input._data.shape)
    x = input if input._data.shape == shape else sh.expand(input, shape)
    m = _arrays.host(mask._data)
    m = m if m.shape == shape else np.broadcast_to(m, shape)
    return _index(x, [(0, m)])


def nonzero(input, *, as_tuple=False):
    if input.is_cuda:  # the result's size depends on the data: computed from a host copy
        r = nonzero(input.cpu(), as_tuple=as_tuple)
        return tuple(t.cuda() for t in r) if as_tuple else r.cuda()
    a = input._data
    pos = IDX.mask_positions(EW.unary(EW.ne_s, a, np.bool_, 0).reshape(-1))
    multi = np.empty((max(a.ndim, 1), pos.size), np.int64)
    if a.ndim:
        IDX.unravel(pos, np.asarray(a.shape, np.int64), multi)
    if as_tuple:
        return tuple(_wrap(multi[j].copy()) for j in range(a.ndim)) if a.ndim else \
            (_wrap(np.zeros(pos.size, np.int64)),)
    return _wrap(np.ascontiguousarray(multi[:a.ndim].T))


def argwhere(input):
    return nonzero(input)


# ========================================================================================
# gather (take along a dim with per-position indices)
# ========================================================================================


class GatherBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("index", "dim", "self_sym_sizes")

    # d/dx gather(x, d, idx) = zeros with g added at idx along d
    def _backward(self, g):
        index, dim, shape = self._saved
        return (scatter_add(_zeros(shape, g), dim, index, g),)


class ScatterAddBackward0(Node):
    __slots__ = ()

    # d/dself scatter_add(self, d, idx, src) = g; d/dsrc = gather(g, d, idx)
    def _backward(self, g):
        index, dim = self._saved
        na, nb = self.next_functions
        return (g if na[0] is not None else None,
                gather(g, dim, index) if nb[0] is not None else None)


def _zeros(shape, like):
    return _wrap(_arrays.zeros(like._data, shape, like._data.dtype))


def _index_on(index, like):
    """An index argument as int64 data on the device of ``like`` (no host copy for a CUDA
    index of a CUDA tensor)."""
    if isinstance(index, Tensor) and index._data.__class__ is not np.ndarray:
        a = index._data
        if a.dtype.kind not in "iu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        a = a if a.dtype == np.int64 else a.astype(np.int64)
    else:
        a = _advanced_array(index).astype(np.int64, copy=False)
    if a.__class__ is not like.__class__:
        a = _arrays.to_device(a, _device.of(like))
    return a


def _dim_views(x_arr, idx_arr, d):
    """3-D (outer, size, inner) views of x restricted to the index's extent in other dims."""
    key = tuple(slice(None) if i == d else slice(0, s) for i, s in enumerate(idx_arr.shape))
    xs = x_arr[key]
    outer = int(np.prod(idx_arr.shape[:d], dtype=np.int64))
    inner = int(np.prod(idx_arr.shape[d + 1:], dtype=np.int64))
    return xs, outer, inner


def _dim_index(index, like, what):
    """The index of gather/scatter: an int32/int64 tensor (PyTorch's dtype error otherwise),
    as int64 data on ``like``'s device, 0-dim read as 1-dim (as PyTorch does)."""
    if not isinstance(index, Tensor) or index._data.dtype.kind not in "iu" \
            or index._data.dtype == np.uint8:
        raise RuntimeError(f"{what}(): Expected dtype int32/int64 for index")
    a = _index_on(index, like)
    return a.reshape(1) if a.ndim == 0 else a


def gather(input, dim, index, *, sparse_grad=False):
    x = input._data
    idx = _dim_index(index, x, "gather")
    if x.ndim == 0:
        x = x.reshape(1)
    d = wrap_dim(dim, x.ndim)
    if idx.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i, s in enumerate(idx.shape):
        if i != d and s > x.shape[i]:
            raise RuntimeError(
                f"Size does not match at dimension {i} expected index {list(idx.shape)} to be "
                f"no larger than self {list(x.shape)} apart from dimension {d}")
    xs, outer, inner = _dim_views(x, idx, d)
    x3 = xs.reshape(outer, x.shape[d], inner)
    i3 = idx.reshape(outer, idx.shape[d], inner)
    out = _arrays.empty(x, i3.shape, x.dtype)
    bad = IDX.on(x).gather_dim(x3, i3, out) if out.size else -1
    if bad >= 0:
        raise index_error(_arrays.host(i3.reshape(-1))[bad], d, x.shape[d])
    r = _wrap(out.reshape(index._data.shape))
    if state.enabled and input._requires_grad:
        attach(r, GatherBackward0((edge(input),), (index, d, input._data.shape)))
    return r


def take_along_dim(input, indices, dim):
    return gather(input, dim, indices)


def _check_scatter(x, idx, d, src):
    """PyTorch's scatter checks: index as many dims as self and src, no larger than src, and
    no larger than self apart from ``d``; src of self's dtype."""
    if not isinstance(src, Tensor):
        raise TypeError("scatter_add(): argument 'src' (position 3) must be Tensor, not "
                        f"{type(src).__name__}")
    if src._data.dtype != x.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    s = src._data.shape or (1,)
    if idx.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if idx.ndim != len(s):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if any(n > s[i] or (i != d and n > x.shape[i]) for i, n in enumerate(idx.shape)):
        raise RuntimeError(
            f"Expected index {list(idx.shape)} to be no larger than self {list(x.shape)} apart "
            f"from dimension {d} and to be no larger size than src {list(s)}")


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    x = input._data
    idx = _dim_index(index, x, "scatter")
    x1 = x.reshape(1) if x.ndim == 0 else x
    d = wrap_dim(dim, x1.ndim)
    _check_scatter(x1, idx, d, src)
    out_arr = EW.unary(EW.copy, x1, x.dtype)
    xs, outer, inner = _dim_views(out_arr, idx, d)
    o3 = xs.reshape(outer, x1.shape[d], inner)
    sd = src._data.reshape(1) if src._data.ndim == 0 else src._data
    s3 = _arrays.contiguous(sd[tuple(slice(0, n) for n in idx.shape)]).reshape(
        outer, idx.shape[d], inner)
    bad = IDX.on(x).scatter_add_dim(s3, idx.reshape(outer, idx.shape[d], inner), o3)
    if bad >= 0:
        raise index_error(_arrays.host(idx.reshape(-1))[bad], d, x1.shape[d])
    if not _arrays.shares_memory(o3, out_arr):
        # the restricted view needed a copy: scatter went there, write it back
        EW.unary(EW.copy, o3.reshape(xs.shape), x.dtype, out=xs)
    r = _wrap(out_arr.reshape(x.shape))
    if state.enabled and (input._requires_grad or src._requires_grad):
        attach(r, ScatterAddBackward0((edge(input), edge(src)), (index, d)))
    return r


# ========================================================================================
# item assignment (untracked: autograd-tracked assignment is the in-place ops' job)
# ========================================================================================


def _basic_numpy_key(parsed, ndim):
    key = []
    for kind, v in parsed:
        if kind == "int":
            key.append(v)
        elif kind == "slice":
            _check_step(v.step)
            key.append(v)
        elif kind == "none":
            key.append(None)
        elif kind == "ellipsis":
            key.append(Ellipsis)
    key.append(Ellipsis)
    return tuple(key)


def assign(x, key, value):
    """Write ``value`` (tensor or number) into ``x[key]`` in place; bumps the version."""
    parsed, _ = _parse(key, x._data.ndim)
    dt = dtype_of(x)
    src = as_type(value, dt) if isinstance(value, Tensor) else np.asarray(value, dtype=dt.np)
    if src.ndim and src.__class__ is not x._data.__class__:  # x[k] = v copies across devices
        src = _arrays.to_device(src, _device.of(x._data))
    if any(kind == "adv" for kind, _ in parsed):
        # basic part first (a view), then scatter into it along the advanced plan
        dim = 0
        view_key = []
        adv = []
        for kind, v in parsed:
            if kind == "adv":
                adv.append((dim, v))
                view_key.append(slice(None) if v.dtype != np.bool_ else Ellipsis)
                dim += v.ndim if v.dtype == np.bool_ else 1
                if v.dtype == np.bool_:
                    view_key[-1] = slice(None)
                    view_key.extend([slice(None)] * (v.ndim - 1))
            elif kind == "int":
                view_key.append(v)
            elif kind == "slice":
                view_key.append(v)
                dim += 1
            elif kind == "none":
                view_key.append(None)
                dim += 1
            else:
                view_key.append(Ellipsis)
                dim += v
        target = x._data[tuple(view_key) + (Ellipsis,)]
        check_writable(target)
        plan = _plan(target.shape, adv)
        if expand_error(src.shape, plan.out_shape) is not None:
            raise RuntimeError(
                f"shape mismatch: value tensor of shape {list(src.shape)} cannot be broadcast "
                f"to indexing result of shape {list(plan.out_shape)}")
        vals = _arrays.empty(target, plan.out_shape, dt.np)
        EW.unary(EW.copy, src, dt.np, out=vals)
        t3 = plan.permuted(target)
        shaped = t3.reshape(plan.outer, plan.n, plan.inner)
        v3 = vals.reshape(plan.outer, plan.flat.size, plan.inner)
        IDX.on(target).put_axis(v3, plan.flat_for(target), shaped)
        if not _arrays.shares_memory(shaped, target):
            EW.unary(EW.copy, shaped.reshape(t3.shape), dt.np, out=t3)
    else:
        view = x._data[_basic_numpy_key(parsed, x._data.ndim)]
        check_writable(view)
        EW.unary(EW.copy, src, dt.np, out=view)
    x._bump_version()


__all__ = ["getitem", "assign", "index_select", "masked_select", "nonzero", "argwhere",
           "gather", "take_along_dim", "scatter_add", "_dtype"]
