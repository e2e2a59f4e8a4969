"""An allow-listed reader of the ``data.pkl`` in PyTorch's zip checkpoints.

It interprets the pickle opcodes itself (Python's unpickler is never called) and knows a
fixed list of names, each mapped to a checked constructor: tensors (``_rebuild_tensor_v2``,
``_rebuild_parameter``), storages, dtypes, ``torch.Size``, ``torch.device``, OrderedDict,
Counter, set, complex, bytes, NumPy arrays and scalars of numgrad's dtypes, and the globals
the user allowed (``numgrad.serialization.add_safe_globals``). Any other name, opcode or
argument is refused, as ``torch.load(weights_only=True)`` refuses it (a name with PyTorch's
``pickle.UnpicklingError``); nothing else in the file can name a function to call. Memory
is bounded by the pickle's size (every opcode makes at most as much as it reads), tuples are
limited in nesting as they are made (hashing a deep one would exhaust the C stack) and the
finished object in container nesting."""

import pickle
import re
import struct
from collections import Counter, OrderedDict

import numpy as np

from numgrad import _device, _dtype, _safe_globals
from numgrad._pickle_writer import NUMPY_CODES, storage_name
from numgrad._shape import Size

_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_LOCATION = re.compile(r"cpu|cuda(:[0-9]{1,4})?")
_STORAGES = {storage_name(d): d for d in _dtype.ALL}
_DTYPES = {d.name: d for d in _dtype.ALL}


class Malformed(ValueError):
    """Something in the pickle that load refuses."""


class DepthError(Malformed):
    """Containers nested deeper than max_depth."""


class Refused(pickle.UnpicklingError):
    """A global or call that ``weights_only`` loads refuse (PyTorch's error class)."""


def _bad(message):
    raise Malformed(message)


class _Name:
    """A global the pickle named, to be called by REDUCE."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class _StorageType:
    __slots__ = ("dtype",)

    def __init__(self, d):
        self.dtype = d


class _NpDtype:
    """``numpy.dtype(code, False, True)`` until its state (byte order) is checked."""

    __slots__ = ("np", "checked")

    def __init__(self, code):
        self.np = np.dtype(code)
        self.checked = False


class _NpArray:
    """``numpy.core.multiarray._reconstruct(ndarray, (0,), b'b')`` before its BUILD."""

    __slots__ = ("array",)

    def __init__(self):
        self.array = None


class StorageRef:
    """A storage the pickle referenced: its host elements and its saved location."""

    __slots__ = ("key", "dtype", "numel", "location", "array", "placed")

    def __init__(self, key, d, numel, location, array):
        self.key, self.dtype, self.numel, self.location = key, d, numel, location
        self.array = array
        self.placed = None


class TensorRecord:
    """A tensor load made on a storage: rebuilt on the placed storage afterwards."""

    __slots__ = ("tensors", "storage", "offset", "shape", "strides")

    def __init__(self, tensor, storage, offset, shape, strides):
        self.tensors = [tensor]
        self.storage, self.offset, self.shape, self.strides = storage, offset, shape, strides


def clamp_bools(a):
    """Bytes other than 0 and 1 in a bool array made 1 (what a bool means to the kernels)."""
    u = a.view(np.uint8)
    np.minimum(u, 1, out=u)


def view(storage_array, offset, shape, strides, itemsize):
    """The tensor data on a 1-D storage array (bounds were checked)."""
    byte_strides = tuple(s * itemsize for s in strides)
    if storage_array.__class__ is np.ndarray:
        return np.lib.stride_tricks.as_strided(storage_array[offset:], shape, byte_strides)
    return storage_array.as_strided(shape, byte_strides, offset)


def _ints(value, what, nonneg=True):
    if type(value) not in (tuple, Size) or any(type(v) is not int for v in value):
        _bad(f"a tensor's {what} is not a tuple of ints")
    if nonneg and any(v < 0 for v in value):
        _bad(f"a tensor's {what} {value} has a negative entry")
    return tuple(value)


class Reader:
    """Reads one pickle: ``load()`` makes the objects, with tensors on empty placeholders,
    and ``attach`` then reads the storages they use and puts the tensors on them (so that
    nothing big is allocated before the whole pickle is checked)."""

    def __init__(self, data, max_depth, pos=0):
        self.data = data
        self.pos = pos
        self.user = _safe_globals.user_allowed()
        self.user_ids = {id(v) for v in self.user.values()}
        self.open_storage = None  # set: storages are read as the pickle names them
        self.max_depth = max_depth
        self.memo = {}
        self.stack = []
        self.marks = []
        self.storages = {}
        self.records = []
        self.by_tensor = {}
        self.tuple_depth = {}

    # ---------------------------------------------------------------- bytes
    def _read(self, n):
        p = self.pos
        if n > len(self.data) - p:
            _bad("data.pkl ends in the middle of an instruction")
        self.pos = p + n
        return self.data[p:p + n]

    def _line(self):
        end = self.data.find(b"\n", self.pos, self.pos + 256)
        if end < 0:
            _bad("data.pkl has a name longer than 256 bytes or without its end")
        line = self.data[self.pos:end]
        self.pos = end + 1
        return line.decode("ascii")

    def _pop_mark(self):
        if not self.marks:
            _bad("data.pkl pops a mark it never set")
        items = self.stack
        self.stack = self.marks.pop()
        return items

    def _pop(self):
        if not self.stack:
            _bad("data.pkl pops an empty stack")
        return self.stack.pop()

    def _top(self):
        if not self.stack:
            _bad("data.pkl reads an empty stack")
        return self.stack[-1]

    # ---------------------------------------------------------------- the loop
    def load(self, to_end=True):
        handlers = {
            0x80: self._proto, 0x2E: None, 0x28: self._mark, 0x7D: lambda: self._push({}),
            0x5D: lambda: self._push([]), 0x29: lambda: self._push(()), 0x74: self._tuple,
            0x85: lambda: self._tuple_n(1), 0x86: lambda: self._tuple_n(2),
            0x87: lambda: self._tuple_n(3), 0x61: self._append, 0x65: self._appends,
            0x73: self._setitem, 0x75: self._setitems, 0x4E: lambda: self._push(None),
            0x88: lambda: self._push(True), 0x89: lambda: self._push(False),
            0x4B: lambda: self._push(self._read(1)[0]),
            0x4D: lambda: self._push(struct.unpack("<H", self._read(2))[0]),
            0x4A: lambda: self._push(struct.unpack("<i", self._read(4))[0]),
            0x8A: self._long1, 0x47: lambda: self._push(struct.unpack(">d", self._read(8))[0]),
            0x58: lambda: self._unicode(struct.unpack("<I", self._read(4))[0]),
            0x8C: lambda: self._unicode(self._read(1)[0]),
            0x55: self._short_binstring, 0x43: lambda: self._push(bytes(self._read(
                self._read(1)[0]))),
            0x42: lambda: self._push(bytes(self._read(struct.unpack("<I", self._read(4))[0]))),
            0x71: lambda: self._put(self._read(1)[0]),
            0x72: lambda: self._put(struct.unpack("<I", self._read(4))[0]),
            0x94: lambda: self._put(len(self.memo)),
            0x68: lambda: self._get(self._read(1)[0]),
            0x6A: lambda: self._get(struct.unpack("<I", self._read(4))[0]),
            0x95: lambda: self._read(8), 0x63: self._global, 0x52: self._reduce,
            0x62: self._build, 0x51: self._persid, 0x8F: lambda: self._push(set()),
            0x90: self._additems, 0x81: self._newobj,
        }
        while True:
            op = self._read(1)[0]
            handler = handlers.get(op, False)
            if handler is None:  # STOP
                break
            if handler is False:
                _bad(f"data.pkl uses pickle opcode {bytes([op])!r}, which numgrad does not "
                     "read (a file torch.load(weights_only=True) cannot read either)")
            handler()
        if self.marks or len(self.stack) != 1:
            _bad("data.pkl stops with an unbalanced stack")
        if to_end and self.pos != len(self.data):
            _bad("data.pkl has bytes after its end")
        result = self.stack[0]
        _check_nesting(result, self.max_depth)
        return result

    def _push(self, v):
        self.stack.append(v)

    def _proto(self):
        if self._read(1)[0] > 5:
            _bad("data.pkl declares a pickle protocol over 5")

    def _mark(self):
        self.marks.append(self.stack)
        self.stack = []

    def _make_tuple(self, items):
        t = tuple(items)
        depth = 1
        for v in t:
            if type(v) is tuple:
                depth = max(depth, 1 + self.tuple_depth.get(id(v), 1))
        if depth > self.max_depth:
            raise DepthError(f"more than max_depth={self.max_depth} containers are nested")
        if depth > 1:
            self.tuple_depth[id(t)] = depth
        return t

    def _tuple(self):
        self._push(self._make_tuple(self._pop_mark()))

    def _tuple_n(self, n):
        if len(self.stack) < n:
            _bad("data.pkl makes a tuple of more items than its stack holds")
        items = self.stack[-n:]
        del self.stack[-n:]
        self._push(self._make_tuple(items))

    def _append(self):
        v = self._pop()
        if type(self._top()) is not list:
            _bad("data.pkl appends to something that is not a list")
        self.stack[-1].append(v)

    def _appends(self):
        items = self._pop_mark()
        if type(self._top()) is not list:
            _bad("data.pkl appends to something that is not a list")
        self.stack[-1].extend(items)

    def _additems(self):
        items = self._pop_mark()
        if type(self._top()) is not set:
            _bad("data.pkl adds items to something that is not a set")
        self.stack[-1].update(items)

    def _set_items(self, items):
        target = self._top()
        if type(target) not in (dict, OrderedDict, Counter):
            _bad("data.pkl sets items of something that is not a dict")
        for i in range(0, len(items) - 1, 2):
            target[items[i]] = items[i + 1]

    def _setitem(self):
        v = self._pop()
        k = self._pop()
        self._set_items([k, v])

    def _setitems(self):
        items = self._pop_mark()
        if len(items) % 2:
            _bad("data.pkl sets an odd number of dict items")
        self._set_items(items)

    def _long1(self):
        self._push(int.from_bytes(self._read(self._read(1)[0]), "little", signed=True))

    def _unicode(self, n):
        self._push(str(self._read(n), "utf-8", "surrogatepass"))

    def _short_binstring(self):  # Python 2's str: text in PyTorch's own old files
        self._push(self._read(self._read(1)[0]).decode("ascii"))

    def _put(self, k):
        self.memo[k] = self._top()

    def _get(self, k):
        if k not in self.memo:
            _bad(f"data.pkl reads memo entry {k}, which it never stored")
        self._push(self.memo[k])

    # ---------------------------------------------------------------- names
    def _global(self):
        module, name = self._line(), self._line()
        self._push(self._resolve(module, name))

    def _resolve(self, module, name):
        """What a GLOBAL names: a dtype, a storage type, an allowed call or a global the user
        allowed (``add_safe_globals``); nothing else."""
        if module == "__builtin__":  # protocol 2 as Python writes it
            module = "builtins"
        full = f"{module}.{name}"
        if module in _safe_globals.BLOCKED_MODULES:
            raise Refused(f"Trying to load unsupported GLOBAL {full} whose module {module} is "
                          "blocked.")
        try:
            return _resolve(module, name)
        except Malformed:
            if full in self.user:
                return self.user[full]
            if module in ("torch", "torch._utils") or module.partition(".")[0] == "numpy":
                raise  # PyTorch's own kinds that numgrad has not: the file's problem
        shown = full[len("builtins."):] if module == "builtins" else full
        raise Refused(
            f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please "
            f"use `torch.serialization.add_safe_globals([{shown}])` or the "
            f"`torch.serialization.safe_globals([{shown}])` context manager to allowlist this "
            "global if you trust this class/function.")

    def _newobj(self):
        args = self._pop()
        cls = self._pop()
        if not isinstance(cls, type) or id(cls) not in self.user_ids:
            raise Refused("Can only create new object for nn.Parameter or classes allowlisted "
                          f"via `add_safe_globals` but got {cls}")
        if type(args) is not tuple:
            _bad("data.pkl makes an object from arguments that are not a tuple")
        self._push(cls.__new__(cls, *args))

    def _reduce(self):
        args = self._pop()
        func = self._top()
        if type(func) is not _Name and id(func) in self.user_ids:
            if type(args) is not tuple:
                _bad("data.pkl calls a function with arguments that are not a tuple")
            self.stack[-1] = func(*args)
            return
        if type(func) is not _Name or func.name not in _CALLS or type(args) is not tuple:
            _bad(f"data.pkl calls {type(func).__name__} objects, not an allowed name")
        self.stack[-1] = getattr(self, _CALLS[func.name])(*args)

    def _build(self):
        state = self._pop()
        inst = self._top()
        if type(inst) is OrderedDict:  # a state dict's attributes (``_metadata``)
            if type(state) is not dict or any(type(k) is not str for k in state):
                _bad("data.pkl sets an OrderedDict's attributes from something else")
            inst.__dict__.update(state)
        elif type(inst) is _NpDtype:
            if (type(state) is not tuple or len(state) != 8 or state[0] != 3
                    or state[1] not in ("<", "|", "=") or state[2:5] != (None, None, None)):
                _bad("a NumPy dtype in data.pkl is not a plain little-endian one")
            inst.checked = True
        elif type(inst) is _NpArray and inst.array is None:
            self.stack[-1] = _ndarray(inst, state)
            self._replace(inst, self.stack[-1])
        elif id(type(inst)) in self.user_ids:  # a class the user allowed: pickle's rule
            if hasattr(inst, "__setstate__"):
                inst.__setstate__(state)
                return
            slots = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slots = state
            if state:
                inst.__dict__.update(state)
            for k, v in (slots or {}).items():
                setattr(inst, k, v)
        else:
            _bad(f"data.pkl sets the state of a {type(inst).__name__}")

    def _replace(self, old, new):
        """Memo entries stored before an array's BUILD refer to the finished array."""
        for k, v in self.memo.items():
            if v is old:
                self.memo[k] = new

    def _persid(self):
        self._push(self.storage_ref(self._pop()))

    def storage_ref(self, pid):
        """The storage a persistent id names (``('storage', type, key, location, numel)``,
        and a sixth entry None in the legacy format)."""
        if type(pid) is tuple and len(pid) == 6 and pid[5] is None:
            pid = pid[:5]
        if (type(pid) is not tuple or len(pid) != 5 or pid[0] != "storage"
                or type(pid[1]) is not _StorageType or type(pid[2]) is not str
                or not _KEY.fullmatch(pid[2]) or type(pid[3]) is not str
                or not _LOCATION.fullmatch(pid[3]) or type(pid[4]) is not int or pid[4] < 0):
            _bad(f"data.pkl has a persistent id {str(pid)[:80]} that is not a storage")
        _, kind, key, location, numel = pid
        ref = self.storages.get(key)
        if ref is None:
            ref = self.storages[key] = StorageRef(key, kind.dtype, numel, location, None)
        elif (ref.dtype, ref.numel, ref.location) != (kind.dtype, numel, location):
            _bad(f"storage {key} is referenced as two different storages")
        if ref.array is None and self.open_storage is not None:
            ref.array = self.open_storage(key, ref.dtype, numel)
        return ref

    def attach(self, open_storage):
        """Read each storage (``open_storage(key, dtype, numel)`` returns its host elements)
        and put its tensors on it."""
        for ref in self.storages.values():
            if ref.array is None:
                ref.array = open_storage(ref.key, ref.dtype, ref.numel)
        for rec in self.records:
            data = view(rec.storage.array, rec.offset, rec.shape, rec.strides,
                        rec.storage.dtype.itemsize)
            for t in rec.tensors:
                t._data = data

    # ---------------------------------------------------------------- allowed calls
    def _rebuild_tensor(self, storage, offset, size, stride, requires_grad, hooks,
                        metadata=None):
        from numgrad.tensor import _wrap
        if type(storage) is not StorageRef:
            _bad("a tensor in data.pkl is not built on a storage")
        if type(offset) is not int or offset < 0:
            _bad(f"a tensor's storage offset is {offset!r}")
        shape, strides = _ints(size, "size"), _ints(stride, "stride")
        if len(shape) != len(strides):
            _bad(f"a tensor has size {shape} but stride {strides}")
        if type(requires_grad) is not bool:
            _bad(f"a tensor's requires_grad is {requires_grad!r}")
        if type(hooks) not in (OrderedDict, dict) or (
                metadata is not None and type(metadata) is not dict):
            _bad("a tensor's hooks or metadata are not dicts")
        n = 1
        for d in shape:
            n *= d
        if n:
            last = offset + sum((d - 1) * s for d, s in zip(shape, strides))
            if last >= storage.numel:
                _bad(f"a tensor of size {shape}, stride {strides} and offset {offset} reaches "
                     f"element {last} of a storage of {storage.numel}")
        elif offset > storage.numel:
            _bad(f"an empty tensor's offset {offset} is past its storage's end")
        if requires_grad and not storage.dtype.is_floating_point:
            _bad(f"a tensor of {storage.dtype.name} requires grad")
        t = _wrap(np.empty(0, storage.dtype.np))  # its data comes in ``attach``
        if storage.array is not None:  # read already (a full unpickler's load)
            t._data = view(storage.array, offset, shape, strides, storage.dtype.itemsize)
        if requires_grad:
            t.requires_grad_(True)
        record = TensorRecord(t, storage, offset, shape, strides)
        self.records.append(record)
        self.by_tensor[id(t)] = record
        return t

    def _rebuild_parameter(self, data, requires_grad, hooks, state=None):
        from numgrad.nn.parameter import Parameter
        record = self.by_tensor.get(id(data))
        if record is None or type(requires_grad) is not bool or state:
            _bad("a parameter in data.pkl is not built from a tensor and a bool")
        if requires_grad and not record.storage.dtype.is_floating_point:
            _bad(f"a parameter of {record.storage.dtype.name} requires grad")
        p = Parameter(data, requires_grad)
        record.tensors.append(p)
        return p

    def _size(self, dims=()):
        return Size(_ints(dims, "torch.Size", nonneg=False))

    def _device(self, kind, index=None):
        if type(kind) is not str or (index is not None and type(index) is not int):
            _bad("a torch.device in data.pkl is not made of a str and an int")
        return _device.device(kind, index)

    def _ordered_dict(self):
        return OrderedDict()

    def _counter(self, items=None):
        if items is not None and type(items) is not dict:
            _bad("a Counter in data.pkl is not made from a dict")
        return Counter(items or {})

    def _set(self, items=()):
        if type(items) not in (list, tuple):
            _bad("a set in data.pkl is not made from a list")
        return set(items)

    def _complex(self, real=0.0, imag=0.0):
        if type(real) not in (int, float) or type(imag) not in (int, float):
            _bad("a complex in data.pkl is not made of two numbers")
        return complex(real, imag)

    def _encode(self, text, encoding="utf-8"):
        if type(text) is not str or encoding not in ("latin1", "latin-1"):
            _bad("data.pkl encodes bytes other than as latin1 text")
        return text.encode("latin1")

    def _np_reconstruct(self, cls, shape, code):
        if cls is not _NDARRAY or shape != (0,) or code != b"b":
            _bad("a NumPy array in data.pkl is not made as NumPy makes one")
        return _NpArray()

    def _np_dtype(self, code, align=False, copy=True):
        if type(code) is not str or code not in NUMPY_CODES or align is not False:
            _bad(f"a NumPy dtype in data.pkl is {str(code)[:20]!r}; numgrad reads "
                 f"{', '.join(sorted(NUMPY_CODES))}")
        return _NpDtype(code)

    def _np_scalar(self, dtype, data):
        if type(dtype) is not _NpDtype or not dtype.checked or type(data) is not bytes \
                or len(data) != dtype.np.itemsize:
            _bad("a NumPy scalar in data.pkl is not a dtype and its bytes")
        return np.frombuffer(data, dtype.np)[0]


def _ndarray(inst, state):
    if type(state) is not tuple or len(state) != 5 or state[0] != 1:
        _bad("a NumPy array's state in data.pkl is not (1, shape, dtype, fortran, data)")
    _, shape, dtype, fortran, data = state
    if type(shape) is not tuple or any(type(n) is not int or n < 0 for n in shape) \
            or type(dtype) is not _NpDtype or not dtype.checked or type(fortran) is not bool \
            or type(data) is not bytes:
        _bad("a NumPy array's state in data.pkl is not (1, shape, dtype, fortran, data)")
    n = dtype.np.itemsize
    for d in shape:
        n *= d
    if n != len(data):
        _bad(f"a NumPy array of shape {shape} and dtype {dtype.np} holds {len(data)} bytes")
    a = np.frombuffer(data, dtype.np).copy()
    if a.dtype == np.bool_:
        clamp_bools(a)
    return a.reshape(shape[::-1]).T if fortran else a.reshape(shape)


_NDARRAY = _Name("numpy.ndarray")
_CALLS = {
    "torch._utils._rebuild_tensor_v2": "_rebuild_tensor",
    "torch._utils._rebuild_parameter": "_rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state": "_rebuild_parameter",
    "torch.Size": "_size", "torch.device": "_device",
    "collections.OrderedDict": "_ordered_dict", "collections.Counter": "_counter",
    "builtins.set": "_set", "builtins.complex": "_complex", "_codecs.encode": "_encode",
    "numpy.core.multiarray._reconstruct": "_np_reconstruct",
    "numpy._core.multiarray._reconstruct": "_np_reconstruct",
    "numpy.dtype": "_np_dtype",
    "numpy.core.multiarray.scalar": "_np_scalar", "numpy._core.multiarray.scalar": "_np_scalar",
}
_NAMES = {name: _Name(name) for name in _CALLS}
_NAMES["numpy.ndarray"] = _NDARRAY


def _resolve(module, name):
    """What a GLOBAL names: a dtype, a storage type or an allowed call; nothing else."""
    if module == "__builtin__":  # protocol 2 as Python writes it
        module = "builtins"
    if module == "torch" and name in _DTYPES:
        return _DTYPES[name]
    if module == "torch" and name in _STORAGES:
        return _StorageType(_STORAGES[name])
    found = _NAMES.get(f"{module}.{name}")
    if found is None:
        _bad(f"data.pkl names {module}.{name}, which numgrad does not load (it loads "
             "tensors, parameters, numbers, strings, bytes, dtypes, devices, torch.Size, "
             "lists, tuples, sets, dicts and NumPy arrays, as torch.load(weights_only=True) "
             "does)")
    return found


_CONTAINERS = (list, tuple, dict, set)
_INTERNAL = (_Name, _StorageType, _NpDtype, _NpArray, StorageRef)


def _children(obj):
    if isinstance(obj, dict):
        extra = list(vars(obj).values()) if type(obj) is OrderedDict else []
        return [*obj.keys(), *obj.values(), *extra]
    return obj


def _check_nesting(root, limit):
    """Refuse containers nested more than ``limit`` deep (the longest chain; a container
    that holds itself counts once), and the reader's own intermediate objects anywhere."""
    if type(root) in _INTERNAL:
        _bad(f"data.pkl returns a {type(root).__name__}, not an object")
    depth = {}
    on_path = set()
    stack = [(root, False)]
    while stack:
        obj, done = stack.pop()
        k = id(obj)
        if done:
            on_path.discard(k)
            d = 1 + max((depth.get(id(c), 0) for c in _children(obj)
                         if isinstance(c, _CONTAINERS)), default=0)
            if d > limit:
                raise DepthError(f"more than max_depth={limit} containers are nested")
            depth[k] = d
        elif isinstance(obj, _CONTAINERS) and k not in depth and k not in on_path:
            on_path.add(k)
            stack.append((obj, True))
            for c in _children(obj):
                if isinstance(c, _CONTAINERS):
                    stack.append((c, False))
                elif type(c) in _INTERNAL:
                    _bad(f"data.pkl returns a {type(c).__name__} inside a container")
