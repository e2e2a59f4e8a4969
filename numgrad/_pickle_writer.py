"""The ``data.pkl`` of PyTorch's zip checkpoint format, written opcode by opcode.

``numgrad.save`` writes what ``torch.save`` writes: a protocol-2 pickle whose tensors are
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)``
calls and whose storages are persistent ids ``('storage', torch.FloatStorage, key,
location, numel)``, each storage's bytes in its own zip record. The names are written as
text, so torch need not be installed. Tensors, containers, numbers, dtypes, devices and
``torch.Size`` use only names that ``torch.load(weights_only=True)`` allows; any other object
(a whole module) is written as pickle writes it (``__reduce_ex__(2)``), for
``weights_only=False`` loads.

Storages: tensors whose memory comes from one allocation (views of one base: slices,
transposes, expands) share one storage, the span of that allocation they cover, so a load
shares memory as the saved tensors did. A tensor with negative strides, or strides that are
not whole elements, is stored as a contiguous copy (PyTorch has no such tensors)."""

import copyreg
import pickle
import struct
import types
from collections import Counter, OrderedDict

import numpy as np

from numgrad import _device, _dtype
from numgrad._shape import Size
from numgrad.tensor import Tensor

_STORAGE_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage",
                  "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
                  "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                  "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage"}
# NumPy arrays are pickled as NumPy pickles them (a ``_reconstruct`` call and its state);
# only dtypes numgrad's load reads back are written.
NUMPY_CODES = {"b1", "u1", "i1", "i2", "i4", "i8", "f2", "f4", "f8"}
_NP_MODULE = np.arange(1).__reduce__()[0].__module__  # numpy.core / numpy._core.multiarray


class _Unpicklable(pickle.PicklingError, TypeError):
    """An object pickle cannot name (a lambda, a local function): pickle's error class, and a
    TypeError as numgrad.save raised before it stored whole objects."""


def storage_name(d):
    return _STORAGE_NAMES[d.name]


# --------------------------------------------------------------------------- storages


class Storage:
    """One storage to write: ``key`` names its record; its elements are the span
    ``lo:hi`` of one allocation, read through ``source`` (``host()`` returns them)."""

    __slots__ = ("key", "dtype", "location", "lo", "hi", "source", "is_cuda")

    def __init__(self, key, dtype, location, is_cuda):
        self.key, self.dtype, self.location, self.is_cuda = key, dtype, location, is_cuda
        self.lo = self.hi = None  # span in elements (CUDA) or bytes (host) of the allocation
        self.source = None  # the array the span is read through

    def numel(self):
        if self.lo is None:
            return 0
        span = self.hi - self.lo
        return span if self.is_cuda else span // self.dtype.itemsize

    def host(self):
        """The storage's elements as a 1-D C-contiguous host array."""
        n, d = self.numel(), self.dtype.np
        if n == 0:
            return np.empty(0, d)
        a = self.source
        if self.is_cuda:
            return a.buf[self.lo:self.hi].copy_to_host().view(d).reshape(-1)
        # ``source`` is the member whose first byte is ``lo``: read forward from it.
        return np.lib.stride_tricks.as_strided(a, (n,), (d.itemsize,), writeable=False)


def _owner(a):
    """What owns the memory ``a`` views: the first array of its chain of bases, or the
    buffer (bytes, mmap) under it."""
    while True:
        base = a.base
        if base is None:
            return a
        if isinstance(base, np.ndarray):
            a = base
            continue
        inner = getattr(base, "base", None)  # as_strided's wrapper keeps the array it views
        if isinstance(inner, np.ndarray):
            a = inner
            continue
        return base


def _plan_host(a):
    """(allocation key, first byte, end byte, strides in elements) of host array ``a``, or
    None when it must be stored as a copy."""
    item = a.itemsize
    if a.size == 0 or any(s < 0 or s % item for s in a.strides):
        return None
    ptr = a.__array_interface__["data"][0]
    end = ptr + item * (1 + sum((n - 1) * (s // item) for n, s in zip(a.shape, a.strides)))
    return (id(_owner(a)), a.dtype, ptr % item), ptr, end, tuple(s // item for s in a.strides)


def _plan_cuda(a):
    if a.size == 0 or any(s < 0 for s in a.strides_el):
        return None
    end = a.offset + 1 + sum((n - 1) * s for n, s in zip(a.shape, a.strides_el))
    return (id(a.buf), a.dtype), a.offset, end, tuple(a.strides_el)


class Storages:
    """Assigns each tensor a storage, an offset and strides."""

    def __init__(self):
        self.by_alloc = {}
        self.all = []
        self.views = {}  # id(tensor) -> (storage, its first byte/element, strides)
        self.keep = []  # the arrays planned, alive until written

    def _new(self, d, location, is_cuda):
        s = Storage(str(len(self.all)), d, location, is_cuda)
        self.all.append(s)
        return s

    def add(self, t, own=False):
        """Plan ``t``; with ``own``, on a storage of its own (a tensor met only after the
        plan, which must not move the offsets of storages already written)."""
        if id(t) in self.views:
            return
        a = t._data
        is_cuda = a.__class__ is not np.ndarray
        location = "cuda:0" if is_cuda else "cpu"
        plan = None if own else _plan_cuda(a) if is_cuda else _plan_host(a)
        if plan is None:  # a copy of its own, C-contiguous
            s = self._new(t.dtype, location, is_cuda)
            c = a.copy() if is_cuda else np.array(a, order="C")
            if c.size:
                s.source = c
                s.lo, s.hi = (c.offset, c.offset + c.size) if is_cuda else (
                    c.__array_interface__["data"][0],
                    c.__array_interface__["data"][0] + c.nbytes)
            strides = tuple(c.strides_el) if is_cuda else tuple(
                st // c.itemsize for st in c.strides)
            self.views[id(t)] = (s, s.lo, strides)
            self.keep.append((t, c))
            return
        key, lo, hi, strides = plan
        s = self.by_alloc.get(key)
        if s is None:
            s = self.by_alloc[key] = self._new(t.dtype, location, is_cuda)
        if s.lo is None or lo < s.lo:
            s.lo, s.source = lo, a
        s.hi = hi if s.hi is None else max(s.hi, hi)
        self.views[id(t)] = (s, lo, strides)
        self.keep.append((t, a))

    def offset(self, t):
        """(storage, offset in elements, strides in elements) of a planned tensor."""
        s, first, strides = self.views[id(t)]
        if first is None:
            return s, 0, strides
        span = first - s.lo
        return s, (span if s.is_cuda else span // s.dtype.itemsize), strides


# --------------------------------------------------------------------------- the pickle


def _global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


_EMPTY_HOOKS = _global("collections", "OrderedDict") + b")R"


class Writer:
    """Pickles ``obj`` (protocol 2) with its tensors as storage references. With ``plan``,
    it only walks ``obj`` and plans each tensor's storage (``save`` runs it first)."""

    def __init__(self, storages, plan=False):
        self.out = bytearray(b"\x80\x02")
        self.memo = {}
        self.keep = []  # what the memo's ids belong to, alive while writing
        self.storages = storages
        self.plan = plan

    def dump(self, obj):
        self.save(obj)
        self.out += b"."
        return bytes(self.out)

    # ---------------------------------------------------------------- memo
    def _put(self, obj):
        k = len(self.memo)
        self.memo[id(obj)] = k
        self.keep.append(obj)
        self.out += b"q" + bytes([k]) if k < 256 else b"r" + struct.pack("<I", k)

    def _get(self, obj):
        k = self.memo.get(id(obj))
        if k is None:
            return False
        self.out += b"h" + bytes([k]) if k < 256 else b"j" + struct.pack("<I", k)
        return True

    # ---------------------------------------------------------------- values
    def _int(self, v):
        if 0 <= v < 256:
            self.out += b"K" + bytes([v])
        elif 0 <= v < 65536:
            self.out += b"M" + struct.pack("<H", v)
        elif -2**31 <= v < 2**31:
            self.out += b"J" + struct.pack("<i", v)
        else:
            data = pickle.encode_long(v)
            if len(data) > 255:
                raise OverflowError("numgrad.save stores integers of up to 2040 bits")
            self.out += b"\x8a" + bytes([len(data)]) + data

    def _str(self, v):
        data = v.encode("utf-8", "surrogatepass")
        self.out += b"X" + struct.pack("<I", len(data)) + data

    def _bytes(self, v):
        # protocol 2 has no bytes opcode: PyTorch's pickles spell bytes this way
        self.out += _global("_codecs", "encode")
        self._str(v.decode("latin1"))
        self._str("latin1")
        self.out += b"\x86R"

    def _tuple_of(self, items):
        items = tuple(items)
        n = len(items)
        if n == 0:
            self.out += b")"
            return
        if n > 3:
            self.out += b"("
        for v in items:
            self.save(v)
        self.out += (b"\x85", b"\x86", b"\x87")[n - 1] if n <= 3 else b"t"

    def _batched(self, items, opcode):
        items = list(items)
        for i in range(0, len(items), 1000):
            self.out += b"("
            for v in items[i:i + 1000]:
                self.save(v)
            self.out += opcode

    # ---------------------------------------------------------------- objects
    def save(self, obj):
        if obj is None:
            self.out += b"N"
        elif obj is True or obj is False:
            self.out += b"\x88" if obj else b"\x89"
        elif type(obj) is int:
            self._int(obj)
        elif type(obj) is float:
            self.out += b"G" + struct.pack(">d", obj)
        elif type(obj) is str:
            self._str(obj)
        elif isinstance(obj, (np.integer, np.floating, np.bool_)):
            self.save(obj.item())
        elif isinstance(obj, _dtype.dtype):
            self.out += _global("torch", obj.name)
        elif not self._get(obj):
            self._save_object(obj)

    def _save_object(self, obj):
        if isinstance(obj, Tensor):
            self._tensor(obj)
        elif isinstance(obj, Size):
            self.out += _global("torch", "Size")
            self._tuple_of([tuple(int(n) for n in obj)])
            self.out += b"R"
            self._put(obj)
        elif isinstance(obj, tuple):
            self._tuple_of(obj)
            self._put(obj)
        elif isinstance(obj, list):
            self.out += b"]"
            self._put(obj)
            self._batched(obj, b"e")
        elif isinstance(obj, OrderedDict):
            self.out += _global("collections", "OrderedDict") + b")R"
            self._put(obj)
            self._batched((x for kv in obj.items() for x in kv), b"u")
            state = {k: v for k, v in vars(obj).items() if isinstance(k, str)}
            if state:  # e.g. a module state dict's ``_metadata``
                self.save(state)
                self.out += b"b"
        elif isinstance(obj, Counter):
            self.out += _global("collections", "Counter")
            self._tuple_of([dict(obj)])
            self.out += b"R"
            self._put(obj)
        elif isinstance(obj, dict):
            self.out += b"}"
            self._put(obj)
            self._batched((x for kv in obj.items() for x in kv), b"u")
        elif isinstance(obj, set):
            self.out += _global("builtins", "set")
            self._tuple_of([list(obj)])
            self.out += b"R"
            self._put(obj)
        elif isinstance(obj, bytes):
            self._bytes(obj)
            self._put(obj)
        elif type(obj) is complex:
            self.out += _global("builtins", "complex")
            self._tuple_of([obj.real, obj.imag])
            self.out += b"R"
        elif isinstance(obj, _device.device):
            self.out += _global("torch", "device")
            self._tuple_of([obj.type] if obj.index is None else [obj.type, obj.index])
            self.out += b"R"
            self._put(obj)
        elif isinstance(obj, np.ndarray):
            self._ndarray(obj)
        elif isinstance(obj, (type, types.FunctionType)) or (
                isinstance(obj, types.BuiltinFunctionType)
                and isinstance(getattr(obj, "__self__", None), (types.ModuleType, type(None)))):
            self._global_of(obj)
        else:
            self._reduce(obj)

    # ---------------------------------------------------------------- any other object
    def _global_of(self, obj):
        """A class or function, by name (as pickle writes it)."""
        module = getattr(obj, "__module__", None)
        name = getattr(obj, "__qualname__", None)
        if module is None or name is None or "<" in name:
            raise _Unpicklable(f"numgrad.save cannot store objects of type "
                               f"{type(obj).__name__}: can't pickle {obj!r}, which is not "
                               "found by its name (as torch.save cannot)")
        self.out += _global(module, name)
        self._put(obj)

    def _reduce(self, obj):
        """An object as its ``__reduce_ex__(2)`` says (what ``torch.save`` does for whole
        modules and other objects): a class and its state."""
        reducer = copyreg.dispatch_table.get(type(obj))
        rv = reducer(obj) if reducer is not None else obj.__reduce_ex__(2)
        if isinstance(rv, str):  # a module-level singleton
            self.out += _global(getattr(obj, "__module__", None) or type(obj).__module__, rv)
            self._put(obj)
            return
        func, args, state, items, pairs = (tuple(rv) + (None,) * 5)[:5]
        if func is copyreg.__newobj__:
            self.save(args[0])
            self._tuple_of(args[1:])
            self.out += b"\x81"
        else:
            self.save(func)
            self._tuple_of(args)
            self.out += b"R"
        if self.memo.get(id(obj)) is None:
            self._put(obj)
        if items is not None:
            self._batched(items, b"e")
        if pairs is not None:
            self._batched((x for kv in pairs for x in kv), b"u")
        if state is not None:
            self.save(state)
            self.out += b"b"

    def _tensor(self, t):
        from numgrad.nn.parameter import Parameter
        if self.plan:
            self.storages.add(t)
            self._put(t)
            return
        param = isinstance(t, Parameter)
        if param:
            self.out += _global("torch._utils", "_rebuild_parameter")
        if id(t) not in self.storages.views:  # made by a __reduce_ex__ during the write
            self.storages.add(t, own=True)
        s, offset, strides = self.storages.offset(t)
        self.out += _global("torch._utils", "_rebuild_tensor_v2") + b"("
        self.out += b"("  # the persistent id
        self._str("storage")
        self.out += _global("torch", storage_name(s.dtype))
        self._str(s.key)
        self._str(s.location)
        self._int(s.numel())
        self.out += b"tQ"
        self._int(offset)
        self._tuple_of([int(n) for n in t._data.shape])
        self._tuple_of([int(n) for n in strides])
        self.save(bool(t.requires_grad) and not param)
        self.out += _EMPTY_HOOKS + b"tR"
        if param:
            self.save(bool(t.requires_grad))
            self.out += _EMPTY_HOOKS + b"\x87R"
        self._put(t)

    def _ndarray(self, a):
        code = a.dtype.str[1:]
        if code not in NUMPY_CODES or not a.dtype.isnative:
            raise TypeError(f"numgrad.save cannot store NumPy arrays of dtype {a.dtype} "
                            "(bool, uint8, int8/16/32/64 and float16/32/64 are supported)")
        fortran = bool(a.flags.f_contiguous and not a.flags.c_contiguous)
        data = (a.T if fortran else np.ascontiguousarray(a)).tobytes()
        self.out += _global(_NP_MODULE, "_reconstruct")
        self.out += _global("numpy", "ndarray")
        self._tuple_of([0])
        self._bytes(b"b")
        self.out += b"\x87R"
        self._put(a)
        self.out += b"("
        self._int(1)
        self._tuple_of([int(n) for n in a.shape])
        self.out += _global("numpy", "dtype")
        self._tuple_of([code, False, True])
        self.out += b"R"
        self._tuple_of([3, "|" if a.dtype.itemsize == 1 else "<", None, None, None, -1, -1, 0])
        self.out += b"b"
        self.save(fortran)
        self._bytes(data)
        self.out += b"tb"
