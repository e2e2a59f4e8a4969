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
from numgrad.ops import elementwise as ew
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, IDX, Tensor, _wrap, as_type, attach, dtype_of, edge, state
from numgrad.ops.reduction import sum_to_size
from numgrad.ops.registry import declare


def _is_int(k):
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _is_int_scalar_tensor(k):
    return isinstance(k, Tensor) and k._data.ndim == 0 and k._data.dtype.kind in "iu" \
        and k._data.dtype != np.uint8  # a 0-d uint8 tensor is a mask


def _advanced_array(k):
    if isinstance(k, Tensor):
        a = _arrays.host(k._data)  # plans are built (and indices checked) on the host
    else:
        a = np.asarray(k)
        if not isinstance(k, np.ndarray):  # made from Python numbers (guarded by compile)
            _arrays.constant(a)
        if a.dtype == np.uint64 or (a.dtype == object and all(
                isinstance(v, int) for v in a.reshape(-1))):  # ints past int64
            raise ValueError("Overflow when unpacking long long")
        if a.dtype == object:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if a.size == 0 and a.dtype.kind == "f":
            a = _arrays.constant(a.astype(np.int64))
    if a.dtype.kind not in "iub":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if a.dtype == np.uint8 and isinstance(k, Tensor):
        a = _arrays.astype(a, np.bool_)
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
            parsed.append(("bool", bool(k)))
        elif _is_int(k) or _is_int_scalar_tensor(k):
            v = operator.index(k)
            if not -2**63 <= v < 2**63:
                raise ValueError("Overflow when unpacking long long")
            parsed.append(("int", v))
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
            if a.ndim == 0 and a.dtype == np.bool_:  # a 0-d mask: a new dim of size 1 or 0
                parsed.append(("bool", bool(a)))
                continue
            parsed.append(("adv", a))
            used += a.ndim if a.dtype == np.bool_ else 1
    if single and ndim == 0 and parsed[0][0] == "slice":
        _check_step(key.step)
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
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
    if key.__class__ is int and x._data.ndim and -(1 << 63) <= key < (1 << 63):
        return sh.select(x, 0, key, _key=True)  # x[i], the common case: what _parse gives
    if key.__class__ is tuple and len(key) == 2:  # x[i, j] in range: two selects, as _parse's
        i, j = key
        shape = x._data.shape
        if (i.__class__ is int and j.__class__ is int and len(shape) >= 2
                and -shape[0] <= i < shape[0] and -shape[1] <= j < shape[1]):
            return sh.select(sh.select(x, 0, i), 0, j)
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
        elif kind == "bool":
            r = sh.unsqueeze(r, dim)
            adv.append((dim, _bool_index(v)))
            dim += 1
        else:
            adv.append((dim, v))
            k = v.ndim if v.dtype == np.bool_ else 1
            dim += k
            src += k
    if adv:
        r = _index(r, adv)
    elif r is x:
        r = sh.alias(x)  # x[...] is a new view (AliasBackward0), as in PyTorch
    return r


def check_key(shape, key):
    """The errors ``x[key]`` raises for the basic items of ``key`` (too many indices, ints
    out of range, slice steps), without indexing. Returns whether those items make a view
    (PyTorch skips full slices and ``...``): its leaf-in-place message depends on it."""
    parsed, single = _parse(key, len(shape))
    shape = list(shape)
    dim = src = 0
    view = False
    for kind, v in parsed:
        if kind == "int":
            size = shape.pop(dim)
            if v < -size or v >= size:
                raise IndexError(
                    f"index {v} is out of bounds for dimension {src} with size {size}")
            src += 1
            view = True
        elif kind == "slice":
            if single or v != slice(None):
                _check_step(v.step)
            view = view or not (v.start in (None, 0) and v.step in (None, 1) and (
                v.stop is None or v.stop >= shape[dim]))
            dim += 1
            src += 1
        elif kind in ("none", "bool"):
            shape.insert(dim, 1)
            dim += 1
            view = True
        else:
            k = v if kind == "ellipsis" else v.ndim if v.dtype == np.bool_ else 1
            dim += k
            src += k
    return view


def _bool_index(v):
    """The index array of a boolean scalar: [0] for True, empty for False (PyTorch's)."""
    return _arrays.constant(np.zeros(1 if v else 0, np.int64))


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
                 "_flat_dev", "bad")

    def permuted(self, arr):
        return arr if self.perm is None else arr.transpose(self.perm)

    def flat_for(self, arr):
        """The linearized indices on ``arr``'s device (copied to a GPU once per plan)."""
        if arr.__class__ is np.ndarray:
            return self.flat
        if self._flat_dev is None:
            self._flat_dev = arr.__class__.from_host(self.flat)
        return self._flat_dev


def _plan(x_shape, adv, wrap=True, check=True):
    """The plan of ``x[adv]``; ``check=False`` leaves the bounds check to ``_check_bounds``."""
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
            pos = IDX.mask_positions(_arrays.contiguous(a).reshape(-1))
            multi = _arrays.new((max(k, 1), pos.size), np.int64)
            if k:
                IDX.unravel(pos, _arrays.sizes(mshape), multi)
            for j in range(k):
                dims.append(d + j)
                arrays.append(multi[j])
        else:
            dims.append(d)
            arrays.append(a)
    try:
        bshape = ()
        for a in arrays:
            bshape = broadcast_shapes(bshape, a.shape)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         f"shapes {', '.join(str(list(a.shape)) for a in arrays)}") from None
    k = len(dims)
    # the index arrays, broadcast and stacked: a step a compiled replay runs again
    idx = _arrays.host_step(_stack_indices, arrays, bshape)
    m = idx.shape[1]
    sizes = _arrays.sizes([x_shape[d] for d in dims])
    if m and wrap and 0 in sizes:  # no index is valid for an empty dim
        raise IndexError("index is out of bounds for dimension with size 0")
    plan = _Plan()
    plan._flat_dev = None
    plan.in_shape = tuple(x_shape)
    plan.k = k
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
    flat = plan.flat = _arrays.new(m, np.int64)
    bad_row, bad_col = IDX.linearize(idx, sizes, flat, wrap)
    # PyTorch checks indices as its kernel reads them: none when no element is read
    plan.bad = None
    if bad_row >= 0 and plan.outer and plan.inner:
        plan.bad = (idx[bad_row, bad_col], bad_row, sizes[bad_row], wrap)
        if check:
            _check_bounds(plan)
    return plan


def _stack_indices(arrays, bshape):
    """The int64 (len(arrays), prod(bshape)) array of ``arrays`` broadcast to ``bshape``."""
    m = 1
    for n in bshape:
        m *= n
    idx = np.empty((len(arrays), m), np.int64)
    for j, a in enumerate(arrays):
        idx[j] = np.broadcast_to(a, bshape).reshape(-1)
    return idx


_stack_indices.pure = True


def _check_bounds(plan):
    if plan.bad is not None:
        v, row, size, wrap = plan.bad
        if not wrap:
            raise IndexError("index out of range in self")
        raise IndexError(f"index {v} is out of bounds for dimension {row} with size {size}")


def _gather(arr, plan):
    x3 = _arrays.reshape(plan.permuted(arr), (plan.outer, plan.n, plan.inner))
    out = _arrays.empty(arr, (plan.outer, plan.flat.size, plan.inner), arr.dtype)
    if out.size:
        IDX.gather_axis(x3, plan.flat_for(arr), out)
    return out.reshape(plan.out_shape)


def _scatter_add(g_arr, plan):
    out = _arrays.zeros(g_arr, (plan.outer, plan.n, plan.inner), g_arr.dtype)
    g3 = _arrays.reshape(g_arr, (plan.outer, plan.flat.size, plan.inner))
    if g3.size:
        IDX.scatter_add_axis(g3, plan.flat_for(g_arr), out)
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


@declare(nodes=("IndexSelectBackward0",))
def index_select(input, dim, index):
    if not isinstance(index, Tensor):
        raise TypeError("index_select(): argument 'index' (position 3) must be Tensor, not "
                        f"{type(index).__name__}")
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    if index._data.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    n = index._data.size
    if nd == 0 and n != 1:
        raise RuntimeError(
            f"index_select(): Index to scalar can have only 1 value, got {n} value(s)")
    if index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    x = input if nd else sh.reshape(input, (1,))
    a = _advanced_array(index).reshape(-1)
    if nd > 1 and n and (input._data.size == 0 or d == 1):
        _check_select_kernel(a, x._data.shape[d])
    r = _index_gather(x, _plan(x._data.shape, [(d, a)], wrap=False), IndexSelectBackward0)
    return r if nd else sh.reshape(r, ())


def _check_select_kernel(a, size):
    """The checks of PyTorch's index_select kernels for an empty (at least 2-D) tensor and for
    dim 1, with their messages."""
    if size == 0:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    flat = _arrays.new(a.size, np.int64)
    _, bad = IDX.linearize(_arrays.host_step(_stack_indices, [a], a.shape),
                           _arrays.sizes([size]),
                           flat, False)
    if bad >= 0:
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={a[bad]} axis_dim={size}")


@declare(nodes=("IndexBackward0",))  # PyTorch: MaskedSelectBackward0
def masked_select(input, mask):
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask._data.shape, input._data.shape) or (1,)  # 0-d: as 1-d
    x = input if input._data.shape == shape else sh.expand(input, shape)
    m = _arrays.host(mask._data)
    m = m if m.shape == shape else np.broadcast_to(m, shape)
    return _index(x, [(0, m)])


@declare()
def nonzero(input, *, as_tuple=False):
    if input.is_cuda:  # the result's size depends on the data: computed from a host copy
        r = nonzero(input.cpu(), as_tuple=as_tuple)
        return tuple(t.cuda() for t in r) if as_tuple else r.cuda()
    a = input._data
    pos = IDX.mask_positions(EW.unary(EW.ne_s, a, np.bool_, 0).reshape(-1))
    multi = _arrays.new((max(a.ndim, 1), pos.size), np.int64)
    if a.ndim:
        IDX.unravel(pos, _arrays.sizes(a.shape), multi)
    if as_tuple:
        return tuple(_wrap(_arrays.copy(multi[j])) for j in range(a.ndim)) if a.ndim else \
            (_wrap(_arrays.zeros(pos, pos.size, np.int64)),)
    return _wrap(_arrays.contiguous(multi[:a.ndim].T))


@declare(variants=("function",))
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
        index, dim, src_shape = self._saved
        na, nb = self.next_functions
        return (g if na[0] is not None else None,
                _src_grad(gather(g, dim, index), src_shape) if nb[0] is not None else None)


def _src_grad(g, shape, node="ScatterAddBackward0"):
    """The gradient of scatter_add's ``src`` (index-shaped) checked against src's shape as
    PyTorch's engine does: summed down to it where src expands to it, else an error."""
    gs = g._data.shape
    if gs == shape:
        return g
    if expand_error(shape, gs) is not None:
        raise RuntimeError(f"Function {node} returned an invalid gradient at index "
                           f"1 - got {list(gs)} but expected shape compatible with {list(shape)}")
    return sum_to_size(g, shape)


def _zeros(shape, like):
    return _wrap(_arrays.zeros(like._data, shape, like._data.dtype))


def _index_on(index, like):
    """An index argument as int64 data on the device of ``like`` (no host copy for a CUDA
    index of a CUDA tensor)."""
    if isinstance(index, Tensor) and index._data.__class__ is not np.ndarray:
        a = index._data
        if a.dtype.kind not in "iu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        a = _arrays.astype(a, np.int64)
    else:
        a = _arrays.astype(_advanced_array(index), np.int64)
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


@declare(nodes=("GatherBackward0",))
def gather(input, dim, index, *, sparse_grad=False):
    x = input._data
    idx = _dim_index(index, x, "gather")
    if x.ndim == 0:
        x = x.reshape(1)
    d = wrap_dim(dim, x.ndim)
    if idx.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if idx.size == 0:  # PyTorch checks no sizes against an empty index: nothing to read
        r = _wrap(_arrays.empty(x, index._data.shape, x.dtype))
        if state.enabled and input._requires_grad:
            attach(r, GatherBackward0((edge(input),), (index, d, input._data.shape)))
        return r
    for i, s in enumerate(idx.shape):
        if i != d and s > x.shape[i]:
            raise RuntimeError(
                f"Size does not match at dimension {i} expected index {list(idx.shape)} to be "
                f"no larger than self {list(x.shape)} apart from dimension {d}")
    xs, outer, inner = _dim_views(x, idx, d)
    x3 = xs.reshape(outer, x.shape[d], inner)
    i3 = idx.reshape(outer, idx.shape[d], inner)
    out = _arrays.empty(x, i3.shape, x.dtype)
    bad = IDX.gather_dim(x3, i3, out) if out.size else -1
    if bad >= 0:
        raise index_error(_arrays.host(i3.reshape(-1))[bad], d, x.shape[d])
    r = _wrap(out.reshape(index._data.shape))
    if state.enabled and input._requires_grad:
        attach(r, GatherBackward0((edge(input),), (index, d, input._data.shape)))
    return r


@declare(nodes=("GatherBackward0",))
def take_along_dim(input, indices, dim=None):
    """gather after broadcasting ``input`` and ``indices`` against each other outside ``dim``
    (``dim=None``: along the flattened input)."""
    if not isinstance(indices, Tensor):
        raise TypeError("take_along_dim(): argument 'indices' (position 2) must be Tensor, not "
                        f"{type(indices).__name__}")
    if dim is None:
        return gather(sh.view(input, -1), 0, sh.view(indices, -1))
    nd = input._data.ndim
    if indices._data.ndim != nd:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {nd} dimensions for input, and {indices._data.ndim} "
            "dimensions for indices")
    if indices._data.dtype != np.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{dtype_of(indices)._legacy}")
    d = wrap_dim(dim, nd)
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    xs, js = input._data.shape, indices._data.shape
    ishape = broadcast_shapes(xs[:d] + js[d:d + 1] + xs[d + 1:], js)
    xshape = broadcast_shapes(js[:d] + xs[d:d + 1] + js[d + 1:], xs)
    idx = indices if ishape == js else sh.expand(indices, ishape)
    # PyTorch 2.13 reads the indices modulo the size of ``dim`` (Python's %)
    if xs[d] == 0 and idx._data.size:
        raise RuntimeError("ZeroDivisionError")
    if idx._data.size:
        idx = ew.remainder(idx, xs[d])
    return gather(input if xshape == xs else sh.expand(input, xshape), d, idx)


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
    if idx.size == 0:  # PyTorch checks no sizes against an empty index
        return
    if any(n > s[i] or (i != d and n > x.shape[i]) for i, n in enumerate(idx.shape)):
        raise RuntimeError(
            f"Expected index {list(idx.shape)} to be no larger than self {list(x.shape)} apart "
            f"from dimension {d} and to be no larger size than src {list(s)}")


@declare(nodes=("ScatterAddBackward0",))
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    x = input._data
    idx = _dim_index(index, x, "scatter")
    x1 = x.reshape(1) if x.ndim == 0 else x
    d = wrap_dim(dim, x1.ndim)
    _check_scatter(x1, idx, d, src)
    out_arr = EW.unary(EW.copy, x1, x.dtype)
    if idx.size == 0:  # nothing added (and idx may be larger than self: no views of it)
        r = _wrap(out_arr.reshape(x.shape))
        if state.enabled and (input._requires_grad or src._requires_grad):
            attach(r, ScatterAddBackward0((edge(input), edge(src)), (index, d, src._data.shape)))
        return r
    xs, outer, inner = _dim_views(out_arr, idx, d)
    o3 = xs.reshape(outer, x1.shape[d], inner)
    sd = src._data.reshape(1) if src._data.ndim == 0 else src._data
    s3 = _arrays.contiguous(sd[tuple(slice(0, n) for n in idx.shape)]).reshape(
        outer, idx.shape[d], inner)
    bad = IDX.scatter_add_dim(s3, idx.reshape(outer, idx.shape[d], inner), o3)
    if bad >= 0:
        raise index_error(_arrays.host(idx.reshape(-1))[bad], d, x1.shape[d])
    if not _arrays.shares_memory(o3, out_arr):
        # the restricted view needed a copy: scatter went there, write it back
        EW.unary(EW.copy, o3.reshape(xs.shape), x.dtype, out=xs)
    r = _wrap(out_arr.reshape(x.shape))
    if state.enabled and (input._requires_grad or src._requires_grad):
        attach(r, ScatterAddBackward0((edge(input), edge(src)), (index, d, src._data.shape)))
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
    if not any(kind == "ellipsis" for kind, _ in parsed):
        key.append(Ellipsis)
    return tuple(key)


def assign(x, key, value):
    """Write ``value`` (tensor or number) into ``x[key]`` in place; bumps the version."""
    parsed, _ = _parse(key, x._data.ndim)
    dt = dtype_of(x)
    if key is True or key is False:  # PyTorch: x[False] = v does nothing, x[True] copies
        if key:
            _copy_into(x._data[None], _source(value, dt, x), dt)
            x._bump_version()
        return
    if any(kind in ("adv", "bool") for kind, _ in parsed):
        _put(x, parsed, value, dt)
    else:
        _copy_into(x._data[_basic_numpy_key(parsed, x._data.ndim)], _source(value, dt, x), dt)
    x._bump_version()


def _copy_into(view, src, dt):
    check_writable(view)
    EW.unary(EW.copy, _strip_ones(src, view.ndim), dt.np, out=view)


def _source(value, dt, x):
    """The data of an assigned value in ``x``'s dtype and on its device."""
    src = as_type(value, dt) if isinstance(value, Tensor) else \
        _arrays.constant(np.asarray(_dtype.checked_scalar(value, dt), dtype=dt.np))
    if src.ndim and src.__class__ is not x._data.__class__:  # x[k] = v copies across devices
        src = _arrays.to_device(src, _device.of(x._data))
    return src


def _strip_ones(src, ndim):
    """``src`` without the leading size-1 dims that it has beyond ``ndim`` (PyTorch drops
    them from an assigned value)."""
    n = 0
    while src.ndim - n > ndim and src.shape[n] == 1:
        n += 1
    return src.reshape(src.shape[n:]) if n else src


def _masked_fill_key(parsed):
    """PyTorch writes a one-element value through masked_fill_ (casting it) when the only
    advanced index is one boolean mask."""
    adv = [v for kind, v in parsed if kind in ("adv", "bool")]
    return len(adv) == 1 and not isinstance(adv[0], bool) and adv[0].dtype == np.bool_


def _advanced_view(x, parsed):
    """The basic part of a key applied to ``x._data`` and the advanced items' positions."""
    dim = 0
    view_key = []
    adv = []
    for kind, v in parsed:
        if kind == "adv":
            adv.append((dim, v))
            k = v.ndim if v.dtype == np.bool_ else 1
            view_key.extend([slice(None)] * k)
            dim += k
        elif kind == "int":
            view_key.append(v)
        elif kind == "slice":
            _check_step(v.step)
            view_key.append(v)
            dim += 1
        elif kind == "none":
            view_key.append(None)
            dim += 1
        elif kind == "bool":
            view_key.append(None)
            adv.append((dim, _bool_index(v)))
            dim += 1
        else:
            view_key.append(Ellipsis)
            dim += v
    if all(kind != "ellipsis" for kind, _ in parsed):
        view_key.append(Ellipsis)
    return x._data[tuple(view_key)], adv


def _put(x, parsed, value, dt):
    """x[key] = value for a key with advanced items: the basic part first (a view), then a
    scatter into it along the advanced plan, with PyTorch's checks in its order."""
    target, adv = _advanced_view(x, parsed)  # (PyTorch writes into expanded tensors here)
    vt = isinstance(value, Tensor)
    if vt and value._data.size == 1 and _masked_fill_key(parsed):
        value, vt = value.item(), False
    plan = _plan(target.shape, adv, check=False)
    src = _source(value, dt, x)
    src = _strip_ones(src, len(plan.out_shape))
    if expand_error(src.shape, plan.out_shape) is not None:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(src.shape)} cannot be broadcast "
            f"to indexing result of shape {list(plan.out_shape)}")
    if vt and dtype_of(value) is not dt:
        raise RuntimeError("Index put requires the source and destination dtypes match, got "
                           f"{dt._legacy} for the destination and {dtype_of(value)._legacy} "
                           "for the source.")
    _check_bounds(plan)
    vals = _arrays.empty(target, plan.out_shape, dt.np)
    EW.unary(EW.copy, src, dt.np, out=vals)
    t3 = plan.permuted(target)
    shaped = t3.reshape(plan.outer, plan.n, plan.inner)
    v3 = vals.reshape(plan.outer, plan.flat.size, plan.inner)
    IDX.put_axis(v3, plan.flat_for(target), shaped)
    if not _arrays.shares_memory(shaped, target):
        EW.unary(EW.copy, shaped.reshape(t3.shape), dt.np, out=t3)


__all__ = ["getitem", "assign", "index_select", "masked_select", "nonzero", "argwhere",
           "gather", "take_along_dim", "scatter_add", "_dtype"]
