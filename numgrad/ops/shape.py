"""Shape ops. Views (view, reshape of viewable data, permute, transpose, t, squeeze,
unsqueeze, expand, select, slice) share storage and version counter with their base as in
PyTorch; their backward rules are shape ops too. cat/stack copy with the copy kernel."""

import operator
import warnings

import numpy as np

from numgrad import _arrays, _device, _dtype, _hook, _memory_format
from numgrad._shape import infer_size, parse_shape, wrap_dim, wrap_dims
from numgrad.autograd import creation_meta as _cm
from numgrad.autograd.graph import FREED_MSG, Node
from numgrad.kernels._parallel import ELEMENTWISE, pick
from numgrad.ops._util import (
    EW,
    Tensor,
    _wrap,
    as_type,
    attach,
    dtype_of,
    edge,
    is_tensor_instance,
    state,
)
from numgrad.ops.reduction import ExpandBackward0, sum_to_size
from numgrad.ops.registry import declare, write_out


def view_of(base, arr):
    """A tensor viewing ``arr`` (a view of ``base``'s data): shares the version counter."""
    t = _wrap(arr)
    vc = t._vc = base._shared_vc()
    t._view_ver = vc[0]
    root = t._base = base if base._base is None else base._base
    if state.enabled:  # DEFAULT, or what a view of a view inherits
        t._cmeta = 0 if base._base is None else base._cmeta
    else:
        t._cmeta = _cm.for_new_view(base, False, state.inference)
        # it requires grad as its base does, as PyTorch's (no grad_fn, and no gradient flows
        # back through it: tensor.edge)
        t._requires_grad = root._requires_grad and arr.dtype.kind in "fV"
    return t


class AliasBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx alias(x) = g
    def _backward(self, g):
        return (g,)


def alias(input):
    """A new view of all of ``input`` (``x[...]``, ``movedim`` of a 0-d tensor)."""
    out = view_of(input, input._data)
    if state.enabled and input._requires_grad:
        attach(out, AliasBackward0((edge(input),)))
    return out


# ========================================================================================
# view / reshape / flatten
# ========================================================================================


class ViewBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)
    _meta_only = True

    # d/dx view(x, s) = view(g, x.shape)
    def _backward(self, g):
        return (reshape(g, self._saved[0]),)


UnsafeViewBackward0 = type("UnsafeViewBackward0", (ViewBackward0,), {"__slots__": ()})


def _target_shape(x, shape):
    return infer_size(parse_shape(shape), x._data.size)


def _try_view(arr, shape):
    try:
        return arr.reshape(shape, copy=False)
    except ValueError:
        return None


@declare(nodes=("ViewBackward0",), variants=("method",))
def view(input, *shape):
    """The same data with a new shape; fails when strides make that impossible."""
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        raise NotImplementedError("view(dtype) is not supported by numgrad")
    target = _target_shape(input, shape)
    arr = _try_view(input._data, target)
    if arr is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    out = view_of(input, arr)
    if state.enabled and input._requires_grad:
        attach(out, ViewBackward0((edge(input),), (input._data.shape,)))
    return out


@declare(nodes=("ViewBackward0", "UnsafeViewBackward0"))
def reshape(input, *shape):
    """A view when the strides allow it (``ViewBackward0``), else a copy (``UnsafeViewBackward0``
    over ``CloneBackward0``)."""
    target = _target_shape(input, shape)
    if target == input._data.shape:
        if not (state.enabled and input._requires_grad):
            return view_of(input, input._data)
        out = view_of(input, input._data.reshape(target))
        return attach(out, ViewBackward0((edge(input),), (input._data.shape,)))
    arr = _try_view(input._data, target)
    if arr is not None:
        out = view_of(input, arr)
        if state.enabled and input._requires_grad:
            attach(out, ViewBackward0((edge(input),), (input._data.shape,)))
        return out
    c = clone(input)
    out = _wrap(c._data.reshape(target))
    if state.enabled and c._requires_grad:
        attach(out, UnsafeViewBackward0((edge(c),), (c._data.shape,)))
    return out


@declare(nodes=("ViewBackward0", "UnsafeViewBackward0"))
def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    s = wrap_dim(start_dim, nd)
    e = wrap_dim(end_dim, nd)
    if nd == 0:
        return reshape(input, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = input._data.shape
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return reshape(input, shape[:s] + (n,) + shape[e + 1:])


@declare(nodes=("ViewBackward0",))
def unflatten(input, dim, sizes):
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    if not shape:
        raise RuntimeError("unflatten got an unexpected error:\nDimension specified as 0 but "
                           "tensor has no dimensions")
    sizes = parse_shape(sizes)
    try:
        sizes = infer_size(sizes, shape[d])
    except RuntimeError as e:
        if "is invalid for input of size" not in str(e):
            raise RuntimeError(f"unflatten got an unexpected error:\n{e}") from None
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {d} ({shape[d]}) in the input tensor") from None
    return view(input, shape[:d] + sizes + shape[d + 1:])


@declare(nodes=("ViewBackward0",), variants=("method",))
def view_as(input, other):
    return view(input, other._data.shape)


@declare(nodes=("ViewBackward0", "UnsafeViewBackward0"), variants=("method",))
def reshape_as(input, other):
    return reshape(input, other._data.shape)


# ========================================================================================
# permute / transpose / t
# ========================================================================================


class PermuteBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dims",)
    _meta_only = True

    # d/dx permute(x, p) = permute(g, p^-1)
    def _backward(self, g):
        inv = np.argsort(self._saved[0]).tolist()
        return (permute(g, inv),)


class TransposeBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim0", "dim1")
    _meta_only = True

    # d/dx transpose(x, a, b) = transpose(g, a, b)
    def _backward(self, g):
        return (transpose(g, *self._saved),)


class TBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx t(x) = t(g)
    def _backward(self, g):
        return (t(g),)


@declare(nodes=("PermuteBackward0",))
def permute(input, *dims):
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = parse_shape(dims)
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{nd} is not equal to len(dims) = {len(dims)}")
    seen = []
    for d in dims:  # PyTorch's order: each dim wrapped, then checked against those before it
        d = wrap_dim(d, nd)
        if d in seen:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        seen.append(d)
    dims = tuple(seen)
    out = view_of(input, input._data.transpose(dims))
    if state.enabled and input._requires_grad:
        attach(out, PermuteBackward0((edge(input),), (dims,)))
    return out


@declare(nodes=("TransposeBackward0",), aliases=("swapdims", "swapaxes"))
def transpose(input, dim0, dim1):
    nd = input._data.ndim
    a = wrap_dim(dim0, nd)
    b = wrap_dim(dim1, nd)
    out = view_of(input, input._data.swapaxes(a, b) if nd else input._data)
    if state.enabled and input._requires_grad:
        attach(out, TransposeBackward0((edge(input),), (a, b)))
    return out


@declare(nodes=("TBackward0",))
def t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    out = view_of(input, input._data.T)
    if state.enabled and input._requires_grad:
        attach(out, TBackward0((edge(input),)))
    return out


def T(input):  # noqa: N802 - PyTorch's property name
    nd = input._data.ndim
    return permute(input, tuple(range(nd - 1, -1, -1))) if nd != 1 else input


def mT(input):  # noqa: N802
    nd = input._data.ndim
    if nd == 0:
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity in "
                      "these cases.", UserWarning, stacklevel=2)
        return input
    if nd == 1:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           "Got 1-D tensor.")
    return transpose(input, -2, -1)


def _unique_dims(wrapped, what, raw):
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"movedim: repeated dim in `{what}` ({raw})")


@declare(nodes=("PermuteBackward0",), aliases=("moveaxis",))
def movedim(input, source, destination):
    nd = input._data.ndim
    source = list(source) if isinstance(source, (tuple, list)) else [source]
    destination = list(destination) if isinstance(destination, (tuple, list)) else [destination]
    if len(source) != len(destination):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({source} dims) should "
            f"contain the same number of dims as destination ({destination} dims)")
    src = [wrap_dim(d, nd) for d in source]
    dst = [wrap_dim(d, nd) for d in destination]
    _unique_dims(src, "source", source)
    _unique_dims(dst, "destination", destination)
    if nd == 0:
        return alias(input)
    order = [d for d in range(nd) if d not in src]
    for dd, s in sorted(zip(dst, src)):
        order.insert(dd, s)
    return permute(input, order)


# ========================================================================================
# squeeze / unsqueeze / expand
# ========================================================================================


class SqueezeBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)
    _meta_only = True

    # d/dx squeeze(x) = reshape(g, x.shape)
    def _backward(self, g):
        return (reshape(g, self._saved[0]),)


SqueezeBackward1 = type("SqueezeBackward1", (SqueezeBackward0,), {"__slots__": ()})
SqueezeBackward2 = type("SqueezeBackward2", (SqueezeBackward0,), {"__slots__": ()})
SqueezeBackward4 = type("SqueezeBackward4", (SqueezeBackward0,), {"__slots__": ()})


def squeeze_added_row(input):
    """``squeeze(input, 0)`` of the row matmul adds to a 1-D left operand, recorded as
    PyTorch's in-place ``squeeze_(0)`` there: ``SqueezeBackward4``."""
    out = squeeze(input, 0)
    node = out._grad_fn
    if node is not None:
        node.__class__ = SqueezeBackward4
    return out


class UnsqueezeBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim",)
    _meta_only = True

    # d/dx unsqueeze(x, d) = squeeze(g, d)
    def _backward(self, g):
        return (squeeze(g, self._saved[0]),)


@declare(nodes=("SqueezeBackward0",))
def squeeze(input, dim=None):
    shape = input._data.shape
    nd = len(shape)
    if dim is None:
        new = tuple(s for s in shape if s != 1)
        cls = SqueezeBackward0
    elif isinstance(dim, (tuple, list)):
        ds = wrap_dims(dim, nd)
        new = tuple(s for i, s in enumerate(shape) if not (i in ds and s == 1))
        cls = SqueezeBackward2
    else:
        d = wrap_dim(dim, nd)
        new = tuple(s for i, s in enumerate(shape) if not (i == d and s == 1))
        cls = SqueezeBackward1
    out = view_of(input, input._data.reshape(new))
    if state.enabled and input._requires_grad:
        attach(out, cls((edge(input),), (shape,)))
    return out


@declare(nodes=("UnsqueezeBackward0",))
def unsqueeze(input, dim):
    shape = input._data.shape
    d = wrap_dim(dim, len(shape) + 1)
    out = view_of(input, input._data.reshape(shape[:d] + (1,) + shape[d:]))
    if state.enabled and input._requires_grad:
        attach(out, UnsqueezeBackward0((edge(input),), (d,)))
    return out


@declare(nodes=("ExpandBackward0",), variants=("method",))
def expand(input, *sizes):
    """A broadcast view (no copy); -1 keeps a size (``ExpandBackward0``)."""
    if not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = parse_shape(sizes)
    shape = input._data.shape
    nd, n = len(shape), len(sizes)
    if n < nd:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the number of sizes "
            "provided (" + str(n) + ") must be greater or equal to the number of dimensions in "
            "the tensor (" + str(nd) + ")")
    target = list(sizes)
    strides = [0] * n
    src_strides = input._data.strides
    for i in range(n - 1, -1, -1):
        j = i - (n - nd)
        if j >= 0:
            s = shape[j]
            if target[i] == -1:
                target[i] = s
            if s == target[i]:
                strides[i] = src_strides[j]
            elif s == 1:
                strides[i] = 0
            else:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target[i]}) must match the existing size "
                    f"({s}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                    f"Tensor sizes: {list(shape)}")
        elif target[i] < 0:
            raise RuntimeError(
                f"The expanded size of the tensor ({target[i]}) isn't allowed in a leading, "
                "non-existing dimension " + str(i))
    try:
        arr = _arrays.as_strided(input._data, tuple(target), tuple(strides))
    except ValueError:  # NumPy: "array is too big" (more elements than an int64 counts)
        raise RuntimeError("numel: integer multiplication overflow") from None
    out = view_of(input, arr)
    if state.enabled and input._requires_grad:
        attach(out, ExpandBackward0((edge(input),), (shape, 1)))
    return out


@declare(nodes=("ExpandBackward0",), variants=("method",))
def expand_as(input, other):
    return expand(input, other._data.shape)


@declare(nodes=("ExpandBackward0",))
def broadcast_to(input, size):
    return expand(input, size)


# ========================================================================================
# select / slice (basic indexing) and their backward "embeddings"
# ========================================================================================


class _EmbedBackward(Node):
    """Backward of select/slice: the incoming gradient placed into zeros of the input shape."""

    __slots__ = ()
    _meta_only = True

    def _backward(self, g):
        shape, key = self._saved
        return (embed(g, shape, key),)


class SelectBackward0(_EmbedBackward):
    """d/dx x[..., i, ...] = zeros with g at index i."""

    __slots__ = ()


class SliceBackward0(_EmbedBackward):
    """d/dx x[..., a:b:c, ...] = zeros with g in the slice."""

    __slots__ = ()
    _names_of_saved = ("self_sym_sizes",)


class EmbedBackward(Node):
    __slots__ = ()
    _meta_only = True

    # d/dg embed(g, key) = gg[key]
    def _backward(self, gg):
        return (_take(gg, self._saved[0]),)


def embed(g, shape, key):
    """Zeros of ``shape`` with ``g`` written at ``key`` (a tuple of ints and slices)."""
    gd = g._data
    k0 = key[0] if len(key) == 1 else None
    if (k0.__class__ is int and k0 >= 0 and gd.__class__ is np.ndarray and _hook.TAPE is None
            and not (state.enabled and g._requires_grad) and gd.flags.c_contiguous
            and gd.shape == shape[1:]):
        # row k0 of dim 0 (x[i]'s gradient), nothing recorded: the copy kernel called on the
        # flat row, without the view key and the launcher's checks (a graph of tiny ops)
        out_arr = np.zeros(shape, gd.dtype)
        n = gd.size
        if n:
            k = EW.copy
            pick(k.flat, k.flat_par, n, ELEMENTWISE)(
                gd.ravel(), out_arr.reshape(-1)[k0 * n:(k0 + 1) * n], 0.0, 0.0)
        return _wrap(out_arr)
    out_arr = _arrays.zeros(g._data, shape, g._data.dtype)
    EW.unary(EW.copy, g._data, out_arr.dtype, out=out_arr[key + (Ellipsis,)])
    out = _wrap(out_arr)
    if state.enabled and g._requires_grad:
        attach(out, EmbedBackward((edge(g),), (key,)))
    return out


def _take(x, key):
    """x[key] for a tuple of ints/slices as one differentiable view (used by EmbedBackward)."""
    out = view_of(x, x._data[key + (Ellipsis,)])
    if state.enabled and x._requires_grad:
        attach(out, SliceBackward0((edge(x),), (x._data.shape, key)))
    return out


# (shape, dim, index) -> (SelectBackward0's saved (shape, key), the view's key): every select
# of one place shares one saved tuple, so a graph of tiny ops gets no tracked object for it
_SELECTS = {}


@declare(nodes=("SelectBackward0",))
def select(input, dim, index, _key=False):
    """``input`` at ``index`` along ``dim`` (``x[i]`` passes ``_key`` for its own message)."""
    data = input._data
    shape = data.shape
    nd = len(shape)
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = dim if dim.__class__ is int and 0 <= dim < nd else wrap_dim(dim, nd)
    size = shape[d]
    i = index if index.__class__ is int else int(index)
    if i < -size or i >= size:
        if _key:
            raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(shape)} "
                         f"at dimension {d}")
    if i < 0:
        i += size
    place = _SELECTS.get((shape, d, i))
    if place is None:
        key = (slice(None),) * d + (i,)
        if len(_SELECTS) >= 4096:
            _SELECTS.clear()
        place = _SELECTS[shape, d, i] = ((shape, key), key + (Ellipsis,))
    out = view_of(input, data[place[1]])
    if input._requires_grad and state.enabled:
        # attach's work for a node that saves no tensor: nothing to version-check
        out._grad_fn = SelectBackward0((edge(input),), place[0])
        out._requires_grad = True
    return out


def slice_dim(input, dim, start, stop, step):
    """x[..., start:stop:step] along ``dim`` (``SliceBackward0``)."""
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    if step is not None and step <= 0:
        raise ValueError("step must be greater than zero")
    key = (slice(None),) * d + (slice(start, stop, step),)
    out = view_of(input, input._data[key])
    if state.enabled and input._requires_grad:
        attach(out, SliceBackward0((edge(input),), (shape, key)))
    return out


@declare(nodes=("SliceBackward0",))
def narrow(input, dim, start, length):
    if input._data.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_dim(input, d, start, start + length, 1)


# ========================================================================================
# copies: clone, contiguous, to(dtype)
# ========================================================================================


class CloneBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx clone(x) = 1
    def _backward(self, g):
        return (g,)


class ToCopyBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self_dtype",)
    _meta_only = True

    # d/dx x.to(dtype, device) = g.to(x.dtype, x.device)
    def _backward(self, g):
        dt, dev = self._saved
        if dev is not None and _device.of(g._data) != dev:
            g = to_device(g, dev)
        return (to_dtype(g, dt),)


@declare(nodes=("CloneBackward0",))
def clone(input, *, memory_format=None):
    d = input._data
    phys = _memory_format.order(memory_format, d.shape, "clone")
    if phys is None and memory_format is not _memory_format.contiguous_format:
        phys = _memory_format.preserved(d)  # preserve_format keeps a channels-last layout
    if phys is not None:  # copy in memory order N(D)HWC, seen as NC(D)HW
        d = d.transpose(phys)
    if d.dtype.itemsize == 2 and d.dtype.kind in "fV":  # float16/bfloat16: copy the bits
        a = EW.unary(EW.copy, d.view(np.uint16), np.uint16).view(d.dtype)
    else:
        a = EW.unary(EW.copy, d, d.dtype)
    out = _wrap(a if phys is None else a.transpose(_memory_format.inverse(phys)))
    if state.enabled and input._requires_grad:
        attach(out, CloneBackward0((edge(input),)))
    return out


@declare(nodes=("CloneBackward0",), variants=("method",))
def contiguous(input, memory_format=_memory_format.contiguous_format):
    _memory_format.order(memory_format, input._data.shape, "contiguous", allow_none=False)
    if _memory_format.is_contiguous(input._data, memory_format):
        return input
    return clone(input, memory_format=memory_format)


def to_dtype(input, dtype, copy=False):
    dt = _dtype.get(dtype)
    if dt is dtype_of(input) and not copy:
        return input
    out = _wrap(as_type(input, dt) if dt is not dtype_of(input) else input._data.copy())
    if state.enabled and input._requires_grad:
        if dt._kind != 2:
            return out
        attach(out, ToCopyBackward0((edge(input),), (dtype_of(input), None)))
    return out


def to_device(input, device, dtype=None):
    """A copy of ``input`` on ``device`` (and in ``dtype``), differentiable back to it."""
    dev = _device.get(device)
    dt = _dtype.get(dtype) or dtype_of(input)
    src_dev = _device.of(input._data)
    if src_dev == dev:
        return to_dtype(input, dt)
    arr = input._data
    if dev.type == "cpu" and dt is not dtype_of(input):
        arr = as_type(input, dt)  # cast on the GPU, then copy down
    arr = _arrays.to_device(arr, dev)
    if arr.dtype != dt.np:
        arr = EW.unary(EW.copy, arr, dt.np)
    out = _wrap(arr)
    if state.enabled and input._requires_grad and dt._kind == 2:
        attach(out, ToCopyBackward0((edge(input),), (dtype_of(input), src_dev)))
    return out


@declare(nodes=("ToCopyBackward0",), variants=("method",))
def to(input, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(other)`` and ``to(device, dtype)``."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, Tensor):
            dtype = dtype_of(a)
            device = _device.of(a._data)
        elif isinstance(a, _dtype.dtype) or (a in (float, int, bool)):
            dtype = a
        elif a is not None:
            device = a
    if device is not None and _device.get(device) != _device.of(input._data):
        return to_device(input, device, dtype)
    if dtype is None:
        return clone(input) if copy else input
    return to_dtype(input, dtype, copy)


# ========================================================================================
# cat / stack / split
# ========================================================================================


class CatBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim",)
    _meta_only = True

    # d/dx_i cat(xs, d) = the i-th slice of g along d
    def _backward(self, g):
        dim, sizes = self._saved
        out = []
        off = 0
        for (nxt, _), n in zip(self.next_functions, sizes):
            if nxt is None:
                out.append(None)
            elif n < 0:  # a skipped legacy 1-D empty input: an empty gradient
                out.append(_wrap(_arrays.empty(g._data, (0,), g._data.dtype)))
            else:
                out.append(slice_dim(g, dim, off, off + n, 1))
            off += max(n, 0)
        return tuple(out)


class StackBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim",)
    _meta_only = True

    # d/dx_i stack(xs, d) = select(g, d, i)
    def _backward(self, g):
        dim = self._saved[0]
        nf = self._next  # (node, nr, node, nr, ...), or the node of a single edge (node, 0)
        if nf.__class__ is not tuple:
            nb = self._next2  # or the first of two edges (node, 0), (_next2, 0)
            if nb is False:
                return (select(g, dim, 0),)
            return (select(g, dim, 0) if nf is not None else None,
                    select(g, dim, 1) if nb is not None else None)
        return tuple([select(g, dim, i) if nf[2 * i] is not None else None
                      for i in range(len(nf) >> 1)])


def _tensor_list(tensors, fn):
    cls = tensors.__class__
    if (cls is not list and cls is not tuple) and (
            is_tensor_instance(tensors) or not isinstance(tensors, (list, tuple))):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if len(tensors) == 0:
        if fn != "cat":
            raise RuntimeError(f"{fn} expects a non-empty TensorList")
        raise ValueError(f"torch.{fn}(): expected a non-empty list of Tensors")
    for i, v in enumerate(tensors):
        if v.__class__ is not Tensor and not is_tensor_instance(v):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but "
                            f"got {type(v).__name__}")
    return list(tensors)


def _same_device(ts):
    first = ts[0]._data.__class__
    for t_ in ts[1:]:
        if t_._data.__class__ is not first:
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               "least two devices, cuda:0 and cpu!")


def _join_out(fn, out, tensors, dim):
    """``cat``/``stack`` into ``out``: PyTorch names ``torch.cat()`` in the cast error of both,
    a ``TypeError``."""
    try:
        return write_out(fn, out, tensors, dim)
    except RuntimeError as e:
        msg = str(e)
        if "can't be cast to the desired output type" not in msg:
            raise
        raise TypeError("torch.cat(): input types can't be cast to the desired output type "
                        + msg.rsplit(" ", 1)[1]) from None


@declare(nodes=("CatBackward0",), aliases=("concat", "concatenate"), variants=("function",))
def cat(tensors, dim=0, *, out=None):
    """Concatenate along an existing dim (``CatBackward0``)."""
    if out is not None:
        return _join_out(cat, out, tensors, dim)
    ts = _tensor_list(tensors, "cat")
    for i, t_ in enumerate(ts):
        if t_._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    # legacy: 1-D empty tensors are skipped
    skipped = [t_._data.ndim == 1 and t_._data.shape[0] == 0 for t_ in ts]
    parts = [t_ for t_, s in zip(ts, skipped) if not s]
    position = [i for i, s in enumerate(skipped) if not s]
    dt = ts[0].dtype
    for p in ts[1:]:
        dt = _dtype.promote_types(dt, p.dtype)
    if not parts:
        _same_device(ts)
        out_arr = _arrays.empty(ts[0]._data, (0,), dt.np)
        return _cat_grad(_wrap(out_arr), ts, skipped, 0, dt)
    ref = parts[0]._data.shape
    nd = len(ref)
    d = wrap_dim(dim, nd)
    for i, p in zip(position, parts):
        s = p._data.shape
        if len(s) != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {len(s)}")
        for k in range(nd):
            if k != d and s[k] != ref[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref[k]} but got size {s[k]} for tensor number {i} in the list.")
    total = sum(p._data.shape[d] for p in parts)
    _same_device(parts)
    out_arr = _arrays.empty(parts[0]._data, ref[:d] + (total,) + ref[d + 1:], dt.np)
    off = 0
    lead = (slice(None),) * d
    for p in parts:
        n = p._data.shape[d]
        if n:
            EW.unary(EW.copy, p._data, dt.np, out=out_arr[lead + (slice(off, off + n),)])
        off += n
    return _cat_grad(_wrap(out_arr), ts, skipped, d, dt)


def _cat_grad(out, ts, skipped, d, dt):
    """Attach ``CatBackward0`` to ``out`` when an input requires grad."""
    if state.enabled and any(t_._requires_grad for t_ in ts):
        sizes = tuple(-1 if s else t_._data.shape[d] for t_, s in zip(ts, skipped))
        node = CatBackward0(tuple(edge(t_) for t_ in ts), (d, sizes))
        metas = tuple((t_._data.shape, t_.dtype) if t_.dtype is not dt else None for t_ in ts)
        if any(m is not None for m in metas):
            node._meta = metas
        attach(out, node)
    return out


@declare(nodes=("StackBackward0",), variants=("function",))
def stack(tensors, dim=0, *, out=None):
    """Stack along a new dim (``StackBackward0``)."""
    if out is not None:
        return _join_out(stack, out, tensors, dim)
    ts = _tensor_list(tensors, "stack")
    first = ts[0]._data
    ref = first.shape
    d = wrap_dim(dim, len(ref) + 1)
    same = True  # one dtype, CPU arrays
    for i, p in enumerate(ts):
        a = p._data
        if a.shape != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 and "
                f"{list(a.shape)} at entry {i}")
        if a.dtype is not first.dtype or a.__class__ is not np.ndarray:
            same = False
    if same and d == 0:
        return _stack0(ts, first)
    dt = ts[0].dtype
    for p in ts[1:]:
        dt = _dtype.promote_types(dt, p.dtype)
    _same_device(ts)
    out_arr = _arrays.empty(ts[0]._data, ref[:d] + (len(ts),) + ref[d:], dt.np)
    lead = (slice(None),) * d
    for i, p in enumerate(ts):
        EW.unary(EW.copy, p._data, dt.np, out=out_arr[lead + (i, Ellipsis)])
    out = _wrap(out_arr)
    if state.enabled and any(t_._requires_grad for t_ in ts):
        node = StackBackward0(tuple(edge(t_) for t_ in ts), (d,))
        metas = tuple((t_._data.shape, t_.dtype) if t_.dtype is not dt else None for t_ in ts)
        if any(m is not None for m in metas):
            node._meta = metas
        attach(out, node)
    return out


def _stack0(ts, first):
    """``stack(ts, 0)`` of CPU tensors of one dtype and shape (``first``'s data): each part
    copied by the copy kernel into its block of the result, no promotion, no ``_meta``."""
    out_arr = _arrays.new((len(ts),) + first.shape, first.dtype)
    m = first.size
    if m:
        flat = out_arr.reshape(-1)
        k = EW.copy
        run = pick(k.flat, k.flat_par, m, ELEMENTWISE)
        o = 0
        for p in ts:
            a = p._data
            if a.flags.c_contiguous:
                run(a.ravel(), flat[o:o + m], 0.0, 0.0)
            else:
                EW.unary(k, a, a.dtype, out=flat[o:o + m].reshape(a.shape))
            o += m
    out = _wrap(out_arr)
    if state.enabled:
        for p in ts:
            if p._requires_grad:  # attach's work for a node that saves no tensor
                out._grad_fn = StackBackward0(tuple([edge(p) for p in ts]), _DIM0)
                out._requires_grad = True
                break
    return out


_DIM0 = (0,)  # StackBackward0's saved dim 0, shared


@declare(nodes=("CatBackward0",), variants=("function",))
def hstack(tensors):
    ts = [t_ if t_._data.ndim else reshape(t_, (1,)) for t_ in _tensor_list(tensors, "hstack")]
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


@declare(nodes=("CatBackward0",), variants=("function",))
def vstack(tensors):
    ts = _tensor_list(tensors, "vstack")
    return cat([t_ if t_._data.ndim > 1 else unsqueeze(t_, 0) if t_._data.ndim else
                reshape(t_, (1, 1)) for t_ in ts], 0)


class _PiecesBackward(Node):
    """The one node of all the pieces of ``split``/``chunk``/``unbind`` (piece ``i`` is output
    ``i``): ``_saved = (dim as PyTorch shows it, x's shape, the split size(s), the pieces'
    keys, dim)``."""

    __slots__ = ("_n_outputs",)
    _meta_only = True
    _plain = False

    def _run(self, grads):
        if self._saved is None:
            raise RuntimeError(FREED_MSG)
        return (self._dense(grads),)

    def _dense(self, grads):
        _, shape, _, keys, d = self._saved
        like = next((g for g in grads if g is not None), None)
        if like is None:
            return None
        if _hook.TAPE is None and not (
                state.enabled and any(g is not None and g._requires_grad for g in grads)):
            from numgrad.autograd.regions import pieces_dense
            out = pieces_dense(self, grads)
            if out is not None:
                return out
        parts = [g if g is not None else
                 _wrap(_arrays.zeros(like._data, shape_of(shape, k), like._data.dtype))
                 for g, k in zip(grads, keys)]
        return self._join(parts, d)


def shape_of(shape, key):
    """The shape of ``x[key]`` for an ``x`` of ``shape`` (ints and step-1 slices)."""
    out = list(shape[len(key):])
    for n, k in zip(reversed(shape[:len(key)]), reversed(key)):
        if k.__class__ is not int:
            lo, hi, _ = k.indices(n)
            out.insert(0, max(hi - lo, 0))
    return tuple(out)


class SplitBackward0(_PiecesBackward):
    """d/dx split(x) = the pieces' gradients joined along dim (zeros for absent ones)."""

    __slots__ = ()
    _names_of_saved = ("dim", "self_sym_sizes", "split_size")

    def _join(self, parts, d):
        return cat(parts, d)


class SplitWithSizesBackward0(SplitBackward0):
    __slots__ = ()
    _names_of_saved = ("dim", "self_sym_sizes", "split_sizes")


class UnbindBackward0(_PiecesBackward):
    """d/dx unbind(x) = the slices' gradients stacked along dim (zeros for absent ones)."""

    __slots__ = ()
    _names_of_saved = ("dim",)

    def _join(self, parts, d):
        return stack(parts, d)


def _pieces(input, d, keys, node_cls, size_arg, dim):
    """Views of ``input`` at ``keys`` sharing one ``node_cls`` node (piece ``i`` is its output
    ``i``), created as PyTorch's multi-output views (``creation_meta``)."""
    data = input._data
    st = state
    cm = _cm.for_new_view(input, st.enabled, st.inference, multi=True)
    out = []
    for k in keys:
        p = view_of(input, data[k + (Ellipsis,)])  # (an array even where k picks one item)
        p._cmeta = cm
        out.append(p)
    if st.enabled and input._requires_grad:
        shown = operator.index(dim) & (2**64 - 1)  # PyTorch shows a negative dim as unsigned
        node = node_cls((edge(input),), (shown, data.shape, size_arg, keys, d))
        node._n_outputs = len(keys)
        for nr, p in enumerate(out):
            p._grad_fn = node
            p._output_nr = nr
            p._requires_grad = True
    return tuple(out)


def _split_keys(d, sizes):
    lead = (slice(None),) * d
    keys = []
    off = 0
    for n in sizes:
        keys.append(lead + (slice(off, off + n),))
        off += n
    return tuple(keys)


@declare(nodes=("SplitBackward0", "SplitWithSizesBackward0"))
def split(input, split_size_or_sections, dim=0):
    if input._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if isinstance(split_size_or_sections, int):
        n = split_size_or_sections
        if n < 0:
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={n}")
        d = wrap_dim(dim, input._data.ndim)
        size = input._data.shape[d]
        if n == 0 and size != 0:
            raise RuntimeError("split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {size}")
        sizes = [0] if size == 0 else [n] * (size // n) + ([size % n] if size % n else [])
        return _pieces(input, d, _split_keys(d, sizes), SplitBackward0, n, dim)
    d = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    sizes = [operator.index(n) for n in split_size_or_sections]
    if any(n < 0 for n in sizes):
        raise RuntimeError("split_with_sizes expects split_sizes have only non-negative "
                           f"entries, but got split_sizes={sizes}")
    if sum(sizes) != size:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
            f"size at dimension {d}), but got split_sizes={sizes}")
    return _pieces(input, d, _split_keys(d, sizes), SplitWithSizesBackward0, tuple(sizes), dim)


@declare(nodes=("SplitBackward0", "SplitWithSizesBackward0"))
def chunk(input, chunks, dim=0):
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    # an empty dim gives ``chunks`` empty pieces, as PyTorch's split_with_sizes does
    return split(input, -(-size // chunks) if size else [0] * chunks, dim)


_TENSOR_SPLIT_SIGNATURES = (
    " * (Tensor input, tuple of ints indices, int dim = 0)\n"
    " * (Tensor input, Tensor tensor_indices_or_sections, int dim = 0)\n"
    " * (Tensor input, int sections, int dim = 0)\n")


def _tensor_split_bounds(indices_or_sections, size):
    """The (start, stop) of each piece: ``n`` sections (the first ``size % n`` one longer)
    or the pieces between the given indices (Python's slice rules: negative indices count
    from the end, a stop before its start gives an empty piece)."""
    arg = indices_or_sections
    if isinstance(arg, Tensor):
        if arg.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {arg.dim()} dims")
        if arg.dtype is not _dtype.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have "
                               f"dtype of long, but got {arg.dtype._legacy}")
        arg = arg.item() if arg.dim() == 0 else arg.tolist()
    if isinstance(arg, (list, tuple)):
        try:
            idx = [operator.index(i) for i in arg]
        except TypeError:
            idx = None
        if idx is None:
            raise TypeError("tensor_split() received an invalid combination of arguments - got "
                            "(Tensor, list), but expected one of:\n" + _TENSOR_SPLIT_SIGNATURES)
        starts = [0, *idx]
        return [(a, b) for a, b in zip(starts, [*idx, None])]
    try:
        n = operator.index(arg)
    except TypeError:
        raise TypeError(f"tensor_split() received an invalid combination of arguments - got "
                        f"(Tensor, {type(arg).__name__}), but expected one of:\n"
                        + _TENSOR_SPLIT_SIGNATURES) from None
    if n <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {n}")
    small, extra = divmod(size, n)
    bounds, start = [], 0
    for i in range(n):
        stop = start + small + (i < extra)
        bounds.append((start, stop))
        start = stop
    return bounds


@declare(nodes=("SliceBackward0",))
def tensor_split(input, indices_or_sections=None, dim=0, *, indices=None, sections=None):
    """Pieces of ``input`` along ``dim``: ``n`` sections of sizes differing by at most one,
    or the pieces between ``indices``; each a view (``SliceBackward0``), as PyTorch's."""
    arg = next((a for a in (indices_or_sections, indices, sections) if a is not None), None)
    if input._data.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, input._data.ndim)
    bounds = _tensor_split_bounds(arg, input._data.shape[d])
    return tuple(slice_dim(input, d, a, b, 1) for a, b in bounds)


@declare(nodes=("UnbindBackward0",))
def unbind(input, dim=0):
    d = wrap_dim(dim, input._data.ndim)
    lead = (slice(None),) * d
    keys = tuple(lead + (i,) for i in range(input._data.shape[d]))
    return _pieces(input, d, keys, UnbindBackward0, None, dim)


__all__ = ["view", "reshape", "flatten", "unflatten", "view_as", "reshape_as", "permute",
           "transpose", "t", "T", "mT", "movedim",
           "squeeze", "unsqueeze", "expand", "expand_as", "broadcast_to", "select",
           "slice_dim", "narrow", "clone", "contiguous", "to_dtype", "to", "cat",
           "stack", "hstack", "vstack", "split", "chunk", "tensor_split", "unbind", "embed",
           "sum_to_size", "view_of"]
