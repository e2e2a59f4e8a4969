"""index_add, index_copy, index_fill and their in-place forms: slices of ``source`` (or one
value) added, copied or written into a copy of ``input`` at the positions ``index`` names
along one dim. The checks (PyTorch's, with its messages) run on the host; the writes run in
one kernel on an (outer, size, inner) view: ``index_write_dim`` on the CPU, the GPU's
``put_axis``/``scatter_add_axis`` for a CUDA tensor (``numgrad/kernels/*/indexing.py``).
The derivatives are numgrad ops (index_select, index_fill, sum), so they differentiate
again."""

import numpy as np

from numgrad import _arrays, _device, _dtype
from numgrad._shape import wrap_dim
from numgrad.autograd.graph import Node
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, IDX, Tensor, _wrap, attach, dtype_of, edge, is_scalar, state
from numgrad.ops.inplace import apply_
from numgrad.ops.registry import declare, inplace_of

_FILL_SIGNATURES = (" * (int dim, Tensor index, Tensor value)\n"
                    " * (int dim, Tensor index, Number value)\n")


_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _name(a):
    return _NAMES.get(a.dtype.name, a.dtype.name)


def _sizes(shape):
    return "[" + ", ".join(str(n) for n in shape) + "]"


def _must_be_tensor(what, arg, pos, v):
    if not isinstance(v, Tensor):
        raise TypeError(f"{what}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(v).__name__}")


def _write(x, d, index_host, src_arr, mode, wrap=False):
    """A copy of ``x`` (1-D for 0-d) with ``src_arr`` ((outer, n, inner)) written (mode 0) or
    added (mode 1) at ``index_host`` along ``d``. Returns the copy and the first out-of-range
    index value (None when all fit)."""
    out = EW.unary(EW.copy, x, x.dtype)
    size = x.shape[d]
    outer = int(np.prod(x.shape[:d], dtype=np.int64))
    inner = int(np.prod(x.shape[d + 1:], dtype=np.int64))
    n = index_host.size
    if out.size == 0 or n == 0:
        return out, None
    idx = _arrays.host_step(_flat_index, index_host, size, wrap)
    o3 = out.reshape(outer, size, inner)
    if o3.__class__ is np.ndarray:
        bad = IDX.index_write_dim(src_arr, idx, o3, bool(mode))
    elif mode == 0 or o3.dtype in _ATOMIC_ADD:
        # a CUDA tensor: the index checked here, then the GPU's put or scatter-add
        bad = _arrays.host_step(_first_outside, idx, size)
        if bad < 0:
            (IDX.scatter_add_axis if mode else IDX.put_axis)(
                src_arr, _arrays.to_device(idx, _device.of(o3)), o3)
    else:  # an add without a GPU atomic for the dtype: on a host copy, back to the device
        ho = _arrays.host(o3)
        bad = IDX.index_write_dim(_arrays.host(src_arr), idx, ho, True)
        if bad < 0:
            EW.unary(EW.copy, _arrays.to_device(ho, _device.of(o3)), o3.dtype, out=o3)
    if bad >= 0:
        return out, int(index_host.reshape(-1)[bad])
    return out, None


_ATOMIC_ADD = tuple(np.dtype(t) for t in ("float32", "float64", "int32", "int64"))


def _first_outside(idx, size):
    """The first position of host index ``idx`` outside [0, size), or -1 (a host step: a
    compiled replay checks the current index and guards on the answer)."""
    bad = np.flatnonzero((idx < 0) | (idx >= size))
    return int(bad[0]) if bad.size else -1


def _flat_index(index, size, wrap):
    """The index as a contiguous 1-D int64 array (negative positions counted from the end
    when ``wrap``); a host step numgrad.compile replays."""
    idx = np.ascontiguousarray(index.reshape(-1), dtype=np.int64)
    return np.where(idx < 0, idx + size, idx) if wrap else idx


_flat_index.pure = True


def _src3(source, x, d, n):
    """``source``'s data as a contiguous (outer, n, inner) array on ``x``'s device."""
    a = source._data
    if a.__class__ is not x.__class__:
        a = _arrays.to_device(a, _device.of(x))
    outer = int(np.prod(x.shape[:d], dtype=np.int64))
    inner = int(np.prod(x.shape[d + 1:], dtype=np.int64))
    return _arrays.contiguous(a).reshape(outer, n, inner)


def _select_grad(g, dim, index, source_shape):
    """index_select(g, dim, index) in the shape of ``source`` (0-d source included)."""
    r = ix.index_select(g, dim, index)
    return r if r._data.shape == tuple(source_shape) else sh.reshape(r, tuple(source_shape))


class IndexAddBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("alpha", "dim", "index")

    # d/dself index_add(self, d, idx, src, alpha) = g; d/dsrc = alpha * index_select(g, d, idx)
    def _backward(self, g):
        alpha, dim, index, source_shape = self._saved
        na, nb = self.next_functions
        gs = None
        if nb[0] is not None:
            gs = _select_grad(g, dim, index, source_shape)
            if alpha != 1:
                gs = ew.mul(gs, alpha)
        return (g if na[0] is not None else None, gs)


class IndexCopyBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "index")

    # d/dself index_copy(self, d, idx, src) = g with 0 at idx; d/dsrc = index_select(g, d, idx)
    def _backward(self, g):
        dim, index, source_shape = self._saved
        na, nb = self.next_functions
        return (index_fill(g, dim, index, 0) if na[0] is not None else None,
                _select_grad(g, dim, index, source_shape) if nb[0] is not None else None)


class IndexFillBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "index")

    # d/dself index_fill(self, d, idx, value) = g with 0 at idx
    def _backward(self, g):
        dim, index = self._saved
        return (index_fill(g, dim, index, 0),)


class IndexFillBackward1(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "index")

    # d/dself = g with 0 at idx; d/dvalue = sum(index_select(g, d, idx))
    def _backward(self, g):
        dim, index, wrapped = self._saved
        na, nb = self.next_functions
        gv = None
        if nb[0] is not None:
            gi = ix.index_select(g, dim, wrapped)
            gv = red.sum(gi) if gi._data.ndim else gi
        return (index_fill(g, dim, index, 0) if na[0] is not None else None, gv)


@declare(nodes=("IndexAddBackward0",))
def index_add(input, dim, index, source, *, alpha=1):
    """``input`` with ``alpha * source`` added at the positions ``index`` names along ``dim``
    (repeated positions add up)."""
    _must_be_tensor("index_add", "index", 2, index)
    _must_be_tensor("index_add", "source", 3, source)
    x = input._data
    d = wrap_dim(dim, max(x.ndim, 1))
    ia, sa = index._data, source._data
    if ia.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{ia.ndim} with type: {_name(ia)} and size: {_sizes(ia.shape)}")
    if ia.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{_name(ia)}")
    if sa.dtype != x.dtype:
        raise RuntimeError(f"index_add_(): self ({_name(x)}) and source ({_name(sa)}) must "
                           "have the same scalar type")
    if d != 0 and d >= sa.ndim:
        raise RuntimeError(f"index_add_(): Indexing dim {d} is out of bounds of the source "
                           f"tensor with dim {sa.ndim}")
    n = ia.size
    ns = sa.shape[d] if sa.ndim else 1
    if n != ns:
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({ns}), for dim: {d}")
    xs, ss = list(x.shape), list(sa.shape)
    if xs and ss:
        del xs[d], ss[d]
    if xs != ss:
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {_sizes(x.shape)} "
                           f"source.shape = {_sizes(sa.shape)}")
    dt = dtype_of(input)
    a = _dtype.checked_scalar(alpha, dt)
    src = source
    if dt._kind and a != 1:  # bools add as logical or: alpha does not change the result
        src = ew.mul(source, a)
    x1 = x.reshape(1) if x.ndim == 0 else x
    out, bad = _write(x1, d, _arrays.host(ia), _src3(src, x1, d, n), 1)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size "
                           f"{x1.shape[d]}")
    r = _wrap(out.reshape(x.shape))
    if state.enabled and (input._requires_grad or source._requires_grad) and x.dtype.kind in "fc":
        attach(r, IndexAddBackward0((edge(input), edge(source)), (a, d, index, sa.shape)))
    return r


@inplace_of("index_add")
def index_add_(self, dim, index, source, *, alpha=1):
    return apply_(self, lambda x, s: index_add(x, dim, index, s, alpha=alpha), source)


@declare(nodes=("IndexCopyBackward0",))
def index_copy(input, dim, index, source):
    """``input`` with the slices of ``source`` copied to the positions ``index`` names along
    ``dim``."""
    _must_be_tensor("index_copy", "index", 2, index)
    _must_be_tensor("index_copy", "source", 3, source)
    x = input._data
    d = wrap_dim(dim, max(x.ndim, 1))
    ia, sa = index._data, source._data
    n = ia.size
    if sa.ndim == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element "
                         f"(got {n})")
    if sa.ndim != x.ndim and sa.ndim and x.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({sa.ndim}), "
                         f"destination dimensionality ({x.ndim})")
    if ia.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {ia.ndim})")
    if ia.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{_name(ia)}")
    if sa.dtype != x.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {_name(x)} and (source) {_name(sa)}")
    xs, ss = list(x.shape), list(sa.shape)
    if xs:
        del xs[d]
    if ss:
        del ss[d]
    if xs != ss:
        raise RuntimeError("index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {' '.join(map(str, xs))} at "
                           f"dimension {d} and source slice shape: {' '.join(map(str, ss))} "
                           "at dimension 0.")
    if sa.ndim and n != sa.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                         f"source.size(dim) ({sa.shape[d]})")
    x1 = x.reshape(1) if x.ndim == 0 else x
    out, bad = _write(x1, d, _arrays.host(ia), _src3(source, x1, d, n), 0)
    if bad is not None:
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {d} with "
                         f"size {x1.shape[d]}")
    r = _wrap(out.reshape(x.shape))
    if state.enabled and (input._requires_grad or source._requires_grad) and x.dtype.kind in "fc":
        attach(r, IndexCopyBackward0((edge(input), edge(source)), (d, index, sa.shape)))
    return r


@inplace_of("index_copy")
def index_copy_(self, dim, index, source):
    return apply_(self, lambda x, s: index_copy(x, dim, index, s), source)


def _fill_type_error(dim, index, value):
    names = ", ".join(type(a).__name__ for a in (dim, index, value))
    return TypeError(f"index_fill() received an invalid combination of arguments - got "
                     f"({names}), but expected one of:\n" + _FILL_SIGNATURES)


@declare(nodes=("IndexFillBackward0", "IndexFillBackward1"))
def index_fill(input, dim, index, value):
    """``input`` with ``value`` (a number or a 0-d tensor) written at the positions ``index``
    names along ``dim`` (negative positions count from the end)."""
    vt = isinstance(value, Tensor)
    if not isinstance(index, Tensor) or not (vt or is_scalar(value) or
                                             isinstance(value, complex)):
        raise _fill_type_error(dim, index, value)
    x = input._data
    d = wrap_dim(dim, max(x.ndim, 1))
    ia = index._data
    if ia.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if vt and value._data.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._data.ndim} dimension(s).")
    if ia.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    dt = dtype_of(input)
    if isinstance(value, complex) and dt.np.kind != "c":
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not "
                           "supported")
    v = _arrays.host(value._data).item() if vt else value
    x1 = x.reshape(1) if x.ndim == 0 else x
    n = ia.size
    outer = int(np.prod(x1.shape[:d], dtype=np.int64))
    inner = int(np.prod(x1.shape[d + 1:], dtype=np.int64))
    fill = v if vt and dt.np.kind in "iub" else _dtype.checked_scalar(v, dt)
    s3 = _arrays.full(x1, (outer, n, inner), np.array(fill).astype(dt.np), dt.np)
    out, bad = _write(x1, d, _arrays.host(ia), s3, 0, wrap=True)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size "
                         f"{x1.shape[d]}")
    r = _wrap(out.reshape(x.shape))
    grads = input._requires_grad or (vt and value._requires_grad)
    if state.enabled and grads and x.dtype.kind in "fc":
        if vt:
            h = _arrays.host(ia)
            wrapped = _wrap(np.where(h < 0, h + x1.shape[d], h)) if (h < 0).any() else index
            attach(r, IndexFillBackward1((edge(input), edge(value)), (d, index, wrapped)))
        else:
            attach(r, IndexFillBackward0((edge(input),), (d, index)))
    return r


@inplace_of("index_fill")
def index_fill_(self, dim, index, value):
    return apply_(self, lambda x, v: index_fill(x, dim, index, v), value)


__all__ = ["index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_"]
