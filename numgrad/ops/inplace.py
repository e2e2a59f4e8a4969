"""In-place ops (``add_``, ``mul_``, ``x += y``, ``x[i] = v``, ...) tracked by autograd.

* Without a graph to record (grad mode off, or nothing requires grad) the kernel writes
  straight into the tensor: this is how optimizers update weights under ``no_grad``.
* On a tensor with history, the out-of-place op runs on a snapshot that carries the old
  history, its node becomes the tensor's ``grad_fn`` (named as PyTorch names it:
  ``MulBackward0`` for ``mul_``) and the version counter is bumped, so any node that saved
  the old value raises PyTorch's "modified by an inplace operation" error at backward.
* On a view (or an item assignment), the base gets a ``CopySlices`` node that routes the
  gradient of the written region through the op and the rest around it; the view becomes
  ``AsStridedBackward0`` of the base. Regions are (offset, shape, strides) in elements.
"""

import numpy as np

from numgrad import _arrays, _dtype
from numgrad import tensor as _tensor_module
from numgrad.autograd.creation_meta import rebase_error
from numgrad.autograd.grad_mode import no_grad
from numgrad.autograd.graph import Node
from numgrad.kernels._guard import OVERLAP, check_writable, internal_overlap
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops import shape as sh
from numgrad.ops._util import (
    EW,
    INFERENCE,
    NO_EDGE,
    Tensor,
    _wrap,
    attach,
    dtype_of,
    edge,
    is_scalar,
    state,
    version_checks,
)
from numgrad.ops.registry import REGISTRY, declare, inplace_of

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF = ("a view of a leaf Variable that requires grad is being used in an in-place "
                "operation.")


def check_inplace(t, overlap=False, args=(), view_op=None):
    """``t`` may be written in place (``overlap``: even where two of its elements share
    memory, as PyTorch's fill_ and zero_ allow). A view whose creation forbids in-place
    changes (``_cmeta``: a split piece, a view made under no_grad) raises PyTorch's error when
    the write would be recorded (``t``, its base or a tensor in ``args`` requires grad);
    ``view_op``: ``(name, output_nr)`` of the view of ``t`` actually written (``x[i] = v``)."""
    if not overlap:
        check_writable(t._data)
    if t._vc is INFERENCE and not state.inference:
        t._bump_version()  # raises PyTorch's inference-tensor error
    if state.enabled:
        base = t._base
        if base is not None:
            if t._cmeta and t._data.dtype.kind in "fV" and (
                    t._requires_grad or base._requires_grad
                    or any(isinstance(a, Tensor) and a._requires_grad for a in args)):
                raise rebase_error(t, False, *(view_op or ()))
            if (base._requires_grad or t._requires_grad) and base._grad_fn is None:
                raise RuntimeError(VIEW_OF_LEAF)  # (t: a view made a leaf by requires_grad_)
        if t._requires_grad and t._grad_fn is None and base is None:
            raise RuntimeError(LEAF)


def _needs_record(t, args):
    if not state.enabled or t._data.dtype.kind not in "fc":  # integers have no gradient
        return False
    if t._requires_grad:
        return True
    return any(isinstance(a, Tensor) and a._requires_grad for a in args)


def _write(t, result):
    """Copy ``result`` into ``t``'s storage (PyTorch's shape and cast rules) and bump."""
    r = result._data
    if r.shape != t._data.shape:
        raise RuntimeError(
            f"output with shape {list(t._data.shape)} doesn't match the broadcast shape "
            f"{list(r.shape)}")
    rd, td = dtype_of(result), dtype_of(t)
    if rd._kind > td._kind:
        raise RuntimeError(
            f"result type {rd._legacy} can't be cast to the desired output type {td._legacy}")
    EW.unary(EW.copy, r, t._data.dtype, out=t._data)
    t._bump_version()


def _snapshot(t):
    """A tensor on t's storage that carries t's current history."""
    s = _wrap(t._data)
    s._grad_fn = t._grad_fn
    s._output_nr = t._output_nr
    s._requires_grad = t._requires_grad
    return s


def _keep_old_value(node, src):
    """If ``node`` saved ``src`` (the old value), give it its own copy before the write."""
    if node is not None and node._saved and any(v is src for v in node._saved):
        src._data = src._data.copy()


def _rebase(t, node):
    t._grad_fn = node
    t._output_nr = 0
    t._requires_grad = True


def apply_(t, op, *args, raw=None, overlap=False):
    """t <- op(t, *args) in place. ``raw(t_data, *args)`` writes directly when no graph is
    recorded (no temporary)."""
    check_inplace(t, overlap, args)
    if not _needs_record(t, args):
        if raw is not None:
            raw(t, *args)
            t._bump_version()
        else:
            with no_grad():
                _write(t, op(_wrap(t._data), *args))
        return t
    if t._base is not None:
        return _apply_on_view(t, op, args)
    src = _snapshot(t)
    out = op(src, *args)
    node = out._grad_fn
    _keep_old_value(node, src)
    _write(t, out)
    _save_result_in_place(node, out, t)
    _rebase(t, node)
    return t


def _save_result_in_place(node, out, t):
    """A node that saved its result keeps ``t`` (now holding it) instead of a private copy, so
    modifying ``t`` again raises PyTorch's version error instead of keeping a second array."""
    od = out._data
    chk = version_checks(node, od)
    if not chk:
        return
    vc = t._shared_vc()
    node._saved = tuple(t._data if v is od else v for v in node._saved)
    node._vchk = [(vc, vc[0], t._data) if arr is od else (target, e, arr)
                  for target, e, arr in chk]


# ========================================================================================
# regions of a base's storage
# ========================================================================================


def region_of(base_arr, arr):
    """(offset, shape, strides) in elements of view ``arr`` inside ``base_arr``."""
    if not base_arr.flags.c_contiguous:
        raise NotImplementedError(
            "in-place ops on views of a non-contiguous base are not supported by numgrad")
    item = base_arr.itemsize
    off = _arrays.element_offset(arr, base_arr)
    return (off, arr.shape, tuple(s // item for s in arr.strides))


def _strided(arr, region):
    """The region of C-contiguous ``arr`` as a strided NumPy view."""
    off, shape, strides = region
    flat = arr.reshape(-1)
    item = arr.itemsize
    return _arrays.as_strided(flat[off:], shape, tuple(s * item for s in strides))


def _contig(a):
    return a if a.flags.c_contiguous else EW.unary(EW.copy, a, a.dtype)


class AsStridedBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx as_strided(x, region) = zeros of x's shape with g in the region
    def _backward(self, g):
        shape, region = self._saved
        return (region_embed(g, shape, region),)


class RegionEmbedBackward(Node):
    __slots__ = ()
    _meta_only = True

    # d/dg embed(g, region) = gg[region]
    def _backward(self, gg):
        return (as_strided_region(gg, self._saved[0]),)


class RegionReplaceBackward(Node):
    __slots__ = ()
    _meta_only = True

    # d/dg replace(g, region, v) = gg outside the region, d/dv = gg[region]
    def _backward(self, gg):
        region = self._saved[0]
        nv = self.next_functions[1][0]
        return (region_replace(gg, region, None),
                as_strided_region(gg, region) if nv is not None else None)


def as_strided_region(x, region):
    """The region of ``x`` (as if C-contiguous) as a view (``AsStridedBackward0``)."""
    arr = _strided(_contig(x._data), region)
    out = _wrap(arr)
    if state.enabled and x._requires_grad:
        attach(out, AsStridedBackward0((edge(x),), (x._data.shape, region)))
    return out


def region_embed(g, shape, region):
    out_arr = _arrays.zeros(g._data, shape, g._data.dtype)
    EW.unary(EW.copy, g._data, out_arr.dtype, out=_strided(out_arr, region))
    out = _wrap(out_arr)
    if state.enabled and g._requires_grad:
        attach(out, RegionEmbedBackward((edge(g),), (region,)))
    return out


def region_replace(g, region, v):
    """A copy of ``g`` whose region holds ``v`` (zeros when ``v`` is None)."""
    out_arr = EW.unary(EW.copy, g._data, g._data.dtype)
    target = _strided(out_arr, region)
    if v is None:
        EW.unary(EW.fill, target, target.dtype, 0, out=target)
    else:
        EW.unary(EW.copy, v._data, target.dtype, out=target)
    out = _wrap(out_arr)
    if state.enabled and (g._requires_grad or (v is not None and v._requires_grad)):
        attach(out, RegionReplaceBackward(
            (edge(g), edge(v) if v is not None else NO_EDGE), (region,)))
    return out


def as_strided_node(base, view):
    """A fresh ``AsStridedBackward0`` for a view whose base changed after it was made."""
    return AsStridedBackward0((edge(base),), (base._data.shape, region_of(base._data, view._data)))


_tensor_module._stale_view_node[0] = as_strided_node


class CopySlices(Node):
    """The base's node after an in-place write into one of its regions.

    ``_saved = (region, fn)``: ``fn`` is the node of the op applied to the region (None for a
    plain copy, i.e. item assignment), whose inputs after the first are this node's inputs
    after the base.
    """

    __slots__ = ()
    _meta_only = True
    _plain = False

    def name(self):
        return "torch::autograd::CopySlices"  # PyTorch's C++ name, as its name() shows

    # d/dbase = g outside the region, fn's gradient for the old region inside; d/dothers = fn's
    def _backward(self, g):
        region, fn = self._saved
        if self.next_functions[0][0] is not None and internal_overlap(region[1], region[2]):
            # PyTorch copies the region's gradient into it: refused where it repeats elements
            raise RuntimeError(OVERLAP)
        g_region = as_strided_region(g, region)
        if fn is None:
            return (region_replace(g, region, None), g_region)
        from numgrad.autograd.engine import _conform, check_versions
        if fn._vchk is not None:
            check_versions(fn)
        res = fn._run([g_region])
        if fn._meta is not None:
            res = _conform(fn, res)
        return (region_replace(g, region, res[0]),) + tuple(res[1:])

    def _release(self):
        fn = self._saved[1]
        if fn is not None:
            fn._release()


def _apply_on_view(t, op, args):
    base = t._base
    region = region_of(base._data, t._data)
    base_edge = edge(base)
    src = _wrap(t._data)
    src._requires_grad = True  # stands for the old region inside the wrapped op's node
    out = op(src, *args)
    fn = out._grad_fn
    _keep_old_value(fn, src)
    _write(t, out)
    node = CopySlices((base_edge,) + tuple(fn.next_functions[1:]), (region, fn))
    _rebase(base, node)
    _rebase(t, AsStridedBackward0(((node, 0),), (base._data.shape, region)))
    t._view_ver = t._vc[0]
    return t


# ========================================================================================
# item assignment
# ========================================================================================


class IndexPutBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dself x[idx] = v: g with the written positions zeroed; d/dv = g[idx]
    def _backward(self, g):
        key, mask = self._saved
        nv = self.next_functions[1][0]
        return (ew.where(_wrap(mask), 0.0, g), ix.getitem(g, key) if nv is not None else None)


def setitem(t, key, value):
    """``t[key] = value``: a tracked CopySlices/IndexPutBackward0 when a graph is recorded."""
    makes_view = ix.check_key(t._data.shape, key)  # PyTorch indexes first: its errors first
    if state.enabled and t._requires_grad and t._grad_fn is None and t._base is None:
        raise RuntimeError(VIEW_OF_LEAF if makes_view else LEAF)
    view_op = _written_view(t, key) if t._base is not None and t._cmeta else None
    # the written region is checked (ix.assign), not all of t
    check_inplace(t, True, (value,), view_op)
    vt = isinstance(value, Tensor)
    if not vt and not is_scalar(value):
        from numgrad._factories import tensor
        value = tensor(value, dtype=dtype_of(t))
        vt = True
    if not _needs_record(t, (value,)) or not (t._requires_grad or dtype_of(t)._kind == 2):
        ix.assign(t, key, value)  # (a non-float tensor takes no gradient from its value)
        return
    parsed, _ = ix._parse(key, t._data.ndim)
    if any(kind in ("adv", "bool") for kind, _ in parsed):
        _index_put(t, key, value, vt)
        return
    base = t if t._base is None else t._base
    region_arr = t._data[ix._basic_numpy_key(parsed, t._data.ndim)]
    region = region_of(base._data, region_arr)
    base_edge = edge(base)
    value_edge = edge(value) if vt else NO_EDGE  # before the write (value may view base)
    ix.assign(t, key, value.detach() if vt else value)
    node = CopySlices((base_edge, value_edge), (region, None))
    if vt:
        shape = region_arr.shape
        if value._data.shape != shape or value._data.dtype != t._data.dtype:
            node._meta = (None, (value._data.shape, dtype_of(value)))
    _rebase(base, node)
    if t is not base:
        _rebase(t, AsStridedBackward0(((node, 0),), (base._data.shape,
                                                     region_of(base._data, t._data))))
        t._view_ver = t._vc[0]


def _written_view(t, key):
    """``(name, 0)`` of the view PyTorch makes of ``t`` and writes for ``t[key] = v`` (the
    last select, slice or unsqueeze of a basic key; None: ``t`` itself), for its errors."""
    if t._grad_fn is None:
        return None
    nd = t._data.ndim
    parsed, _ = ix._parse(key, nd)
    if any(kind in ("adv", "bool") for kind, _ in parsed):
        return None
    shape = t._data.shape
    used = sum(kind in ("int", "slice") for kind, _ in parsed)
    d = 0
    name = None
    for kind, v in parsed:
        if kind == "int":
            name, d = "Select", d + 1
        elif kind == "slice":
            lo, hi, step = v.indices(shape[d])
            if not (lo == 0 and hi == shape[d] and step == 1):
                name = "Slice"
            d += 1
        elif kind == "none":
            name = "Unsqueeze"
        elif kind == "ellipsis":
            d += nd - used
    return None if name is None else (name, 0)


def _index_put(t, key, value, vt):
    """A tracked ``t[key] = value`` with advanced items: ``IndexPutBackward0`` on ``t``, or on
    a view, inside the base's ``CopySlices`` (the view becomes ``AsStridedBackward0``)."""
    base = t._base
    old_edge = edge(t) if base is None else NO_EDGE
    base_edge = edge(base) if base is not None else None
    ix.assign(t, key, value.detach() if vt else value)  # first: its checks come first
    mask_t = _wrap(_arrays.zeros(t._data, t._data.shape, np.bool_))
    ix.assign(mask_t, key, True)
    node = IndexPutBackward0((old_edge, edge(value) if vt else NO_EDGE), (key, mask_t._data))
    if vt:
        node._meta = (None, (value._data.shape, dtype_of(value)))
    if base is None:
        _rebase(t, node)
        return
    region = region_of(base._data, t._data)
    outer = CopySlices((base_edge, node.next_functions[1]), (region, node))
    _rebase(base, outer)
    _rebase(t, AsStridedBackward0(((outer, 0),), (base._data.shape, region)))
    t._view_ver = t._vc[0]


# ========================================================================================
# the in-place methods
# ========================================================================================


class ZeroBackward0(Node):
    __slots__ = ()
    _meta_only = True

    # d/dx zero_(x) = 0
    def _backward(self, g):
        return (ew.mul(g, 0),)


FillBackward2 = type("FillBackward2", (ZeroBackward0,), {"__slots__": ()})


class CopyBackwards(Node):
    __slots__ = ()
    _meta_only = True

    # d/dself copy_(self, src) = 0, d/dsrc = g (summed/cast to src by the engine)
    def _backward(self, g):
        ns = self.next_functions[1][0]
        return (ew.mul(g, 0) if self.next_functions[0][0] is not None else None,
                g if ns is not None else None)


def _filled(node_cls):
    def op(src, value=0):
        out = _wrap(EW.unary(EW.fill, src._data, src._data.dtype, value))
        if state.enabled and src._requires_grad:
            attach(out, node_cls((edge(src),)))
        return out
    return op


def _raw_fill(t, value=0):
    if isinstance(value, Tensor):
        value = value.item()
    EW.unary(EW.fill, t._data, t._data.dtype, value, out=t._data)


@inplace_of("zero", nodes=("ZeroBackward0",))
def zero_(self):
    return apply_(self, _filled(ZeroBackward0), raw=_raw_fill, overlap=True)


@inplace_of("fill", nodes=("FillBackward2",))
def fill_(self, value):
    if isinstance(value, Tensor):
        value = value.item()
    value = _dtype.checked_scalar(value, dtype_of(self))
    return apply_(self, _filled(FillBackward2), value, raw=_raw_fill, overlap=True)


def _copied(dst, src):
    shape = dst._data.shape
    arr = _arrays.empty(dst._data, shape, dst._data.dtype)
    EW.unary(EW.copy, src._data, arr.dtype, out=arr)
    out = _wrap(arr)
    if state.enabled and (dst._requires_grad or src._requires_grad):
        node = CopyBackwards((edge(dst), edge(src)))
        if src._data.shape != shape or src._data.dtype != arr.dtype:
            node._meta = (None, (src._data.shape, dtype_of(src)))
        attach(out, node)
    return out


def _raw_copy(t, src):
    EW.unary(EW.copy, src._data, t._data.dtype, out=t._data)


@inplace_of("copy", nodes=("CopyBackwards",))
def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        if not is_scalar(src):
            raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(src).__name__}")
        src = _wrap(_arrays.constant(np.asarray(src)))  # a number: a 0-dim double, long or bool
    from numgrad._shape import broadcast_shapes
    if broadcast_shapes(self._data.shape, src._data.shape) != self._data.shape:
        raise RuntimeError(
            f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1}) must "
            f"match the size of tensor b ({src._data.shape[-1]}) at non-singleton dimension "
            f"{self._data.ndim - 1}")
    if src._data.__class__ is not self._data.__class__ and src._data.ndim:
        from numgrad.ops.shape import to_device
        src = to_device(src, self.device)  # a cross-device copy_, differentiable to src
    return apply_(self, _copied, src, raw=_raw_copy)


class MaskedFillBackward0(Node):
    __slots__ = ()

    # d/dx masked_fill(x, m, v) = g where not m
    def _backward(self, g):
        return (ew._masked(EW.mask_drop, self._saved[0], g),)


class MaskedFillBackward1(Node):
    __slots__ = ()

    # d/dx = g where not m, d/dv = sum of g where m
    def _backward(self, g):
        mask = self._saved[0]
        nv = self.next_functions[1][0]
        return (ew._masked(EW.mask_drop, mask, g),
                ew._masked(EW.mask_keep, mask, g).sum() if nv is not None else None)


@declare(nodes=("MaskedFillBackward0", "MaskedFillBackward1"), variants=("method",))
def masked_fill(self, mask, value, _inplace=False):
    """``value`` where ``mask`` is true (``MaskedFillBackward0``/``1`` for number/tensor); the
    result has the broadcast shape of ``self`` and ``mask`` (``self``'s in place)."""
    if mask._data.dtype != np.bool_:
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype "
            f"{_dtype.cpp_name(mask._data.dtype)}")
    vt = isinstance(value, Tensor)
    if vt and value._data.ndim:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value._data.ndim} dimension(s).")
    fill = value
    dt = dtype_of(self)
    if not vt or value._data.dtype != self._data.dtype:  # the value converted to self's dtype
        fill = ew._scalar_tensor(_dtype.checked_scalar(value.item() if vt else value, dt), dt)
    with no_grad():
        out = ew.where(mask, fill, self)
    if _inplace and out._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(out._data.shape)}")
    if state.enabled and (self._requires_grad or (vt and value._requires_grad)):
        if vt:
            node = MaskedFillBackward1((edge(self), edge(value)), (mask,))
        else:
            node = MaskedFillBackward0((edge(self),), (mask,))
        ew._record(out, node, (self, value) if vt else (self,), out._data.shape, dt)
    return out


@inplace_of("masked_fill")
def masked_fill_(self, mask, value):
    return apply_(self, lambda x, m: masked_fill(x, m, value, True), mask)


def _random_(draw):
    """An in-place random fill: ``draw(generator, data, dtype, *args, **kwargs)`` checks the
    arguments and returns the host draws laid out like ``data`` (``numgrad._random_fill``)."""
    def method(self, *args, generator=None, **kwargs):
        from numgrad.random import default_generator
        g = generator or default_generator
        check_inplace(self)
        arr = draw(g, self._data, dtype_of(self), *args, **kwargs)
        if arr is not self._data:  # (else drawn in place)
            if self._data.__class__ is not np.ndarray:  # host draws, copied to the GPU first
                arr = _arrays.cuda_array().from_host(np.ascontiguousarray(arr))
            EW.unary(EW.copy, arr, self._data.dtype, out=self._data)
        self._bump_version()
        return self
    return method


def _uniform_draw(g, a, dt, a_=0.0, b=1.0, **kwargs):
    from numgrad import _random_fill
    return _random_fill.uniform(g, a, dt, kwargs.pop("from", a_), kwargs.pop("to", b))


def _normal_draw(g, a, dt, mean=0.0, std=1.0):
    from numgrad import _random_fill
    return _random_fill.normal(g, a, dt, mean, std)


def _random_draw(g, a, dt, *args, **kwargs):
    from numgrad import _random_fill
    return _random_fill.random(g, a, dt, args, kwargs)


uniform_ = inplace_of("uniform")(_random_(_uniform_draw))
normal_ = inplace_of("normal")(_random_(_normal_draw))
random_ = inplace_of("random")(_random_(_random_draw))


# Python's in-place operators and item assignment (the named in-place methods come from the
# registry; ``add_`` and the other arithmetic ones from its promotion layer, ``ops.promote``)
METHODS = {
    "__iadd__": REGISTRY["add"].inplace_fn, "__isub__": REGISTRY["sub"].inplace_fn,
    "__imul__": REGISTRY["mul"].inplace_fn, "__itruediv__": REGISTRY["div"].inplace_fn,
    "__ipow__": REGISTRY["pow"].inplace_fn, "__imod__": REGISTRY["remainder"].inplace_fn,
    "__ifloordiv__": REGISTRY["floor_divide"].inplace_fn,
    "__iand__": REGISTRY["bitwise_and"].inplace_fn, "__ior__": REGISTRY["bitwise_or"].inplace_fn,
    "__ixor__": REGISTRY["bitwise_xor"].inplace_fn,
    "__ilshift__": REGISTRY["bitwise_left_shift"].inplace_fn,
    "__irshift__": REGISTRY["bitwise_right_shift"].inplace_fn,
    "__setitem__": setitem,
}


# ========================================================================================
# in-place reshapes (unsqueeze_, squeeze_, t_, transpose_): the tensor takes the view's
# geometry and node, under PyTorch's in-place names
# ========================================================================================

_INPLACE_NODES = {"SqueezeBackward4": sh.SqueezeBackward4}  # (matmul's squeeze_(0) too)


def _inplace_node(node, name):
    """``node`` (of the out-of-place view) as PyTorch's in-place node ``name``."""
    cls = _INPLACE_NODES.get(name)
    if cls is None:
        cls = _INPLACE_NODES[name] = type(name, (node.__class__,), {"__slots__": ()})
    node.__class__ = cls
    return node


def _reshape_(view, rename):
    """The in-place form of view op ``view``: only the tensor's shape and strides change (its
    version is bumped, its node becomes ``rename(view's node)``'s name); a leaf that requires
    grad refuses it, as PyTorch."""
    def method(self, *args, **kwargs):
        check_inplace(self, overlap=True)
        out = view(self, *args, **kwargs)
        self._data = out._data
        node = out._grad_fn
        if node is not None:
            _rebase(self, _inplace_node(node, rename(node)))
        self._bump_version()
        if self._base is not None:  # (its own node stays current)
            self._view_ver = self._vc[0]
        return self
    return method


def _t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return sh.t(input)


# squeeze's nodes 0/1/2 (all dims, one dim, several dims) are 3/4/5 in place
_SQUEEZED = {"SqueezeBackward0": "SqueezeBackward3", "SqueezeBackward1": "SqueezeBackward4",
             "SqueezeBackward2": "SqueezeBackward5"}
unsqueeze_ = inplace_of("unsqueeze")(
    _reshape_(sh.unsqueeze, lambda n: "UnsqueezeBackward1"))
squeeze_ = inplace_of("squeeze")(
    _reshape_(sh.squeeze, lambda n: _SQUEEZED[type(n).__name__]))
t_ = inplace_of("t")(_reshape_(_t, lambda n: "TBackward1"))
transpose_ = inplace_of("transpose")(
    _reshape_(sh.transpose, lambda n: "TransposeBackward1"))
