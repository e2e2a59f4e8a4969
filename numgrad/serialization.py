"""``numgrad.save`` / ``numgrad.load``: PyTorch's zip checkpoint format.

``save`` writes what ``torch.save`` writes (``archive/data.pkl``, a protocol-2 pickle, plus
one record ``archive/data/<key>`` per storage, 64-byte aligned): ``torch.load`` reads it,
``weights_only=True`` included, and views of one tensor keep sharing one storage, with their
offsets and strides. ``load`` reads those files, ``torch.save``'s (zip or legacy), and the files
of numgrad 0.x (a zip of ``.npy`` arrays plus a JSON description, ``format`` =
``numgrad-save-1``). Other objects (whole modules) are written as pickle writes them and load
only with ``weights_only=False`` (Python's unpickler: trusted files only).

Loading with ``weights_only=True`` treats the file as untrusted: nothing is unpickled by
Python (an allow-listed reader interprets the pickle, ``numgrad/_pickle_reader.py``), every
size is checked against limits before memory is allocated, storages stream from the file
into their one final buffer, only numgrad's dtypes are accepted, and anything malformed
raises one RuntimeError."""

import io
import json
import math
import os
import pickle
import re
import struct
import warnings
import zipfile
from collections import OrderedDict

import numpy as np

from numgrad import (
    _arrays,
    _device,
    _dtype,
    _pickle_reader,
    _pickle_writer,
    _safe_globals,
    _torch_legacy,
    _unpickle_full,
)
from numgrad._safe_globals import (  # noqa: F401
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)
from numgrad.tensor import Tensor, _wrap

FORMAT = "numgrad-save-1"  # the format numgrad 0.x wrote; load still reads it


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write ``obj`` to a path or binary file object in PyTorch's zip format."""
    storages = _pickle_writer.Storages()
    _pickle_writer.Writer(storages, plan=True).dump(obj)  # plans every tensor's storage
    pkl = _pickle_writer.Writer(storages).dump(obj)
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        _write_record(z, "archive/data.pkl", pkl)
        _write_record(z, "archive/.format_version", b"1")
        _write_record(z, "archive/.storage_alignment", b"64")
        _write_record(z, "archive/byteorder", b"little")
        for s in storages.all:
            _write_record(z, f"archive/data/{s.key}", s.host())
        _write_record(z, "archive/version", b"3\n")


_ALIGN = 64
_PAD_FIELD = 0x6E67  # an extra field of zeros that puts each record's data on _ALIGN bytes


def _write_record(z, name, data):
    """One stored member whose data starts at a multiple of 64 bytes (so a storage can be
    memory-mapped, as PyTorch's writer does)."""
    if isinstance(data, np.ndarray):
        data = data.reshape(-1).view(np.uint8)
    nbytes = len(data) if isinstance(data, bytes) else data.nbytes
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = nbytes
    zip64 = nbytes * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule: a 20-byte field more
    start = z.start_dir + 30 + len(name.encode()) + (20 if zip64 else 0)
    pad = -start % _ALIGN
    if pad:
        pad += _ALIGN if pad < 4 else 0
        info.extra = struct.pack("<HH", _PAD_FIELD, pad - 4) + bytes(pad - 4)
    with z.open(info, "w", force_zip64=zip64) as fh:
        for i in range(0, nbytes, 64 << 20):  # a memoryview per 64 MiB: no copy
            fh.write(memoryview(data)[i:i + (64 << 20)])


# --------------------------------------------------------------------------- load's limits
# Defaults of load's keywords of the same names (documented in load's docstring).
MAX_BYTES = 64 << 30  # all members together, uncompressed
MAX_RATIO = 100  # uncompressed : compressed, per member and for the whole file
MAX_JSON_BYTES = 16 << 20  # the JSON description (Python objects take ~15x its size)
MAX_DEPTH = 100  # containers nested in containers
# Sizes up to this are not held to max_ratio: a few MiB of zeros deflate 1000:1 in honest
# files, and so little memory is no attack.
_RATIO_FLOOR = 16 << 20
# Arrays stream from their zip member in pieces of this size: the only memory a load needs
# beyond the arrays themselves.
_CHUNK = 1 << 20
_ARRAY_MEMBER = re.compile(r"arrays/(0|[1-9][0-9]*)\.npy")
_TORCH_MEMBER = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")
_DEVICE_TAG = re.compile(r"cpu|cuda(:[0-9]{1,4})?")
# Each kind of node in the JSON tree and the optional fields it may carry.
_NODE_FIELDS = {"tensor": {"requires_grad", "parameter", "device"}, "ndarray": set(),
                "value": set(), "dtype": set(), "list": set(), "tuple": set(),
                "dict": {"ordered"}}
_VALUE_TYPES = (type(None), bool, int, float, str)


class _Malformed(_pickle_reader.Malformed):
    """A problem load found in the file itself."""


class _Refused(_Malformed):
    """A size over one of load's limits (``keyword`` names the limit)."""

    def __init__(self, message, keyword):
        super().__init__(f"{message}; if you trust the file, load it with a larger {keyword}=")


def _bad(message):
    raise _Malformed(message)


def _mib(n):
    return f"{n / 2**20:.1f} MiB"


class _Limits:
    __slots__ = ("max_bytes", "max_ratio", "max_json_bytes", "max_depth")

    def __init__(self, **limits):
        for key, value in limits.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"load: {key} must be a non-negative number, got {value!r}")
            setattr(self, key, value)


# --------------------------------------------------------------------------- reading the zip


def _check_sizes(info, archive_size, limits):
    """Refuse a member whose declared sizes cannot be honest or are over the limits."""
    name, size, packed = info.filename, info.file_size, info.compress_size
    if packed > archive_size:
        _bad(f"{name} declares {packed} compressed bytes in a file of {archive_size} bytes")
    if info.compress_type == zipfile.ZIP_STORED and packed != size:
        _bad(f"{name} is stored uncompressed but declares {packed} bytes stored for {size}")
    if size > limits.max_bytes:
        raise _Refused(f"{name} declares {_mib(size)} (max_bytes is {_mib(limits.max_bytes)})",
                       "max_bytes")
    if size > max(limits.max_ratio * packed, _RATIO_FLOOR):
        raise _Refused(f"{name} declares {_mib(size)} from {packed} compressed bytes, a "
                       f"ratio over max_ratio={limits.max_ratio}", "max_ratio")


def _is_legacy(z):
    """Whether the zip is numgrad 0.x's format (else it is PyTorch's)."""
    return any(n in ("format", "data.json") or n.startswith("arrays/") for n in z.namelist())


def _legacy_name(name):
    if name not in ("format", "data.json") and not _ARRAY_MEMBER.fullmatch(name):
        _bad(f"unexpected member {name!r}")


def _torch_prefix(z):
    """The one folder PyTorch's format keeps every record in (``archive/``), checked."""
    names = z.namelist()
    prefix = names[0].partition("/")[0] + "/" if names else ""
    for name in names:
        if not name.startswith(prefix) or not _TORCH_MEMBER.fullmatch(name[len(prefix):]):
            _bad(f"unexpected member {name!r} (PyTorch's format keeps every record in one "
                 "folder)")
    return prefix


def _members(z, archive_size, limits, check_name):
    """The zip's members by name, after checking each one's kind and sizes and the total."""
    members = {}
    for info in z.infolist():
        name = info.filename
        if name in members:
            _bad(f"two members are named {name!r}")
        check_name(name)
        if info.flag_bits & 1:
            _bad(f"{name} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            _bad(f"{name} uses compression method {info.compress_type} (numgrad reads "
                 "stored or deflated members)")
        _check_sizes(info, archive_size, limits)
        members[name] = info
    total = sum(info.file_size for info in members.values())
    if total > limits.max_bytes:
        raise _Refused(f"the members hold {_mib(total)} in all (max_bytes is "
                       f"{_mib(limits.max_bytes)})", "max_bytes")
    # Checked on the total too: many members may share one run of compressed bytes.
    if total > max(limits.max_ratio * archive_size, _RATIO_FLOOR):
        raise _Refused(f"the members hold {_mib(total)} in a file of {archive_size} bytes, a "
                       f"ratio over max_ratio={limits.max_ratio}", "max_ratio")
    return members


def _read_member(z, members, name, limit, keyword=None):
    """The bytes of a small member, reading no more than its checked size."""
    info = members.get(name)
    if info is None:
        _bad(f"the {name!r} member is missing")
    if info.file_size > limit:
        message = f"{name} holds {info.file_size} bytes"
        if keyword is None:
            _bad(message)
        raise _Refused(f"{message} ({keyword} is {limit})", keyword)
    with z.open(info) as fh:
        # read(n) decompresses at most n bytes; read() would inflate a lying member whole.
        data = fh.read(info.file_size)
        if len(data) != info.file_size or fh.read(1):
            _bad(f"{name} does not hold the {info.file_size} bytes it declares")
    return data


def _read_tree(z, members, limits):
    if _read_member(z, members, "format", 64) != FORMAT.encode():
        _bad(f"the format is not {FORMAT!r}")
    meta = json.loads(_read_member(z, members, "data.json", limits.max_json_bytes,
                                   "max_json_bytes"))
    if not isinstance(meta, dict) or "tree" not in meta:
        _bad("data.json has no 'tree'")
    return meta["tree"]


# --------------------------------------------------------------------------- reading arrays


def _npy_header(fh, name):
    """Shape, Fortran order and NumPy dtype of an .npy member, numgrad's dtypes only."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        _bad(f"{name} is an .npy file of version {version}")
    # Only native byte order: numgrad's kernels read the bytes as they are.
    d = _dtype.from_numpy_dtype(dtype) if dtype.isnative else None
    if d is None:
        names = ", ".join(x.name for x in _dtype.ALL)
        spelled = str(dtype) if str(dtype) == dtype.str else f"{dtype} ({dtype.str})"
        _bad(f"{name} holds dtype {spelled}; numgrad supports {names}")
    if any(type(n) is not int or n < 0 for n in shape):
        _bad(f"{name} has shape {shape}")
    return shape, fortran, d.np


def _fill(fh, a, name):
    """Read ``a``'s bytes from ``fh`` into ``a`` itself, a chunk at a time."""
    buf = a.reshape(-1).view(np.uint8)  # a fresh C-order array: a view, never a copy
    pos = 0
    while pos < buf.size:
        n = fh.readinto(buf[pos:pos + _CHUNK])
        if not n:
            _bad(f"{name} ends after {pos} of its {buf.size} data bytes")
        pos += n


def _read_array(z, info, limits):
    name = info.filename
    with z.open(info) as fh:
        shape, fortran, dtype = _npy_header(fh, name)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > limits.max_bytes:
            raise _Refused(f"{name} declares shape {shape} of {dtype}, {_mib(nbytes)} (max_bytes "
                           f"is {_mib(limits.max_bytes)})", "max_bytes")
        if fh.tell() + nbytes != info.file_size:
            _bad(f"{name} declares shape {shape} of {dtype} ({nbytes} bytes) but holds "
                 f"{info.file_size - fh.tell()} data bytes")
        # Fortran order: the bytes are the C order of the reversed shape; .T is the array.
        a = np.empty(shape[::-1] if fortran else shape, dtype)
        _fill(fh, a, name)
        if fh.read(1):  # also where the zip reader checks the CRC
            _bad(f"{name} holds more than its data")
    return a.T if fortran else a


# --------------------------------------------------------------------------- checking the tree


def _kind(node):
    """The kind of a JSON node (its one kind key), after checking its fields."""
    if not isinstance(node, dict):
        _bad(f"a node is a {type(node).__name__}, not an object")
    kinds = [key for key in node if key in _NODE_FIELDS]
    if len(kinds) != 1:
        _bad(f"a node has fields {sorted(node)[:8]}")
    kind = kinds[0]
    if not node.keys() - {kind} <= _NODE_FIELDS[kind]:
        _bad(f"a {kind} node has fields {sorted(node)[:8]}")
    return kind


def _array_index(k, members):
    if type(k) is not int or k < 0:
        _bad(f"an array index is {k!r}")
    if f"arrays/{k}.npy" not in members:
        _bad(f"the member arrays/{k}.npy is missing")
    return k


def _check_tensor(node, refs, members):
    k = _array_index(node["tensor"], members)
    for key in ("requires_grad", "parameter"):
        if type(node.get(key, False)) is not bool:
            _bad(f"a tensor's {key} is {node[key]!r}")
    device = node.get("device", "cpu")
    if not isinstance(device, str) or not _DEVICE_TAG.fullmatch(device):
        _bad(f"a tensor's device is {device!r}")
    grad = node.get("requires_grad", node.get("parameter", False))
    refs[k] = refs.get(k, False) or grad  # whether the array must be floating point


def _items(node, kind, depth, limits):
    items = node[kind]
    if not isinstance(items, list):
        _bad(f"a {kind} node holds a {type(items).__name__}")
    if depth >= limits.max_depth:
        raise _Refused(f"more than max_depth={limits.max_depth} containers are nested",
                       "max_depth")
    return items


def _check_node(node, refs, members, limits, depth=0):
    """Check a JSON node and everything below it; note the arrays it uses in ``refs``."""
    kind = _kind(node)
    if kind == "tensor":
        _check_tensor(node, refs, members)
    elif kind == "ndarray":
        refs.setdefault(_array_index(node["ndarray"], members), False)
    elif kind == "value" and not isinstance(node["value"], _VALUE_TYPES):
        _bad(f"a value is a {type(node['value']).__name__}")
    elif kind == "dtype" and not (isinstance(node["dtype"], str)
                                  and node["dtype"] in _dtype._BY_NAME):
        _bad(f"unknown dtype {str(node['dtype'])[:40]!r}")
    elif kind in ("list", "tuple"):
        for v in _items(node, kind, depth, limits):
            _check_node(v, refs, members, limits, depth + 1)
    elif kind == "dict":
        if type(node.get("ordered", False)) is not bool:
            _bad("a dict's 'ordered' is not a bool")
        for pair in _items(node, kind, depth, limits):
            if not isinstance(pair, list) or len(pair) != 2:
                _bad("a dict item is not a [key, value] pair")
            _check_key(pair[0], refs, members, limits, depth + 1)
            _check_node(pair[1], refs, members, limits, depth + 1)


def _check_key(node, refs, members, limits, depth):
    """A dict key must decode to something hashable: no dicts or arrays inside."""
    kind = _kind(node)
    if kind in ("dict", "ndarray"):
        _bad(f"a dict key is a {kind}")
    if kind in ("list", "tuple"):
        for v in _items(node, kind, depth, limits):
            _check_key(v, refs, members, limits, depth + 1)
    else:
        _check_node(node, refs, members, limits, depth)


def _read(fh, limits, full=None):
    """Everything that reads the file: ``("legacy", (tree, arrays))`` for numgrad 0.x's
    format, ``("torch", (object, reader))`` for PyTorch's (zip or legacy). ``full``: the
    keywords of Python's unpickler, for a ``weights_only=False`` load."""
    fh.seek(0, io.SEEK_END)
    archive_size = fh.tell()
    fh.seek(0)
    if _torch_legacy.is_legacy(fh.read(14)):
        def refuse(message, keyword):
            raise _Refused(message, keyword)
        return "torch", _torch_legacy.read(fh, archive_size, limits, full, refuse, _fill)
    with zipfile.ZipFile(fh) as z:
        if not _is_legacy(z):
            return "torch", _read_torch(z, archive_size, limits, full)
        members = _members(z, archive_size, limits, _legacy_name)
        tree = _read_tree(z, members, limits)
        refs = {}
        _check_node(tree, refs, members, limits)
        arrays = {}
        for k in sorted(refs):
            arrays[k] = _read_array(z, members[f"arrays/{k}.npy"], limits)
            if refs[k] and arrays[k].dtype.kind != "f":
                _bad(f"arrays/{k}.npy is {arrays[k].dtype} but its tensor requires grad")
    return "legacy", (tree, arrays)


def _read_torch(z, archive_size, limits, full):
    prefix = _torch_prefix(z)
    members = _members(z, archive_size, limits, lambda name: None)
    order = members.get(prefix + "byteorder")
    if order is not None and _read_member(z, members, prefix + "byteorder", 16) != b"little":
        _bad("the storages are big-endian (numgrad reads little-endian ones)")
    pkl = _read_member(z, members, prefix + "data.pkl", limits.max_json_bytes,
                       "max_json_bytes")

    def open_storage(key, d, numel):
        name = f"{prefix}data/{key}"
        info = members.get(name)
        if info is None:
            _bad(f"the record {name!r} is missing")
        nbytes = numel * d.itemsize
        if nbytes > limits.max_bytes:
            raise _Refused(f"{name} declares {numel} elements of {d.name}, {_mib(nbytes)} "
                           f"(max_bytes is {_mib(limits.max_bytes)})", "max_bytes")
        if info.file_size != nbytes:
            _bad(f"{name} holds {info.file_size} bytes for {numel} elements of {d.name}")
        a = np.empty(numel, d.np)
        with z.open(info) as fh:
            _fill(fh, a, name)
            if fh.read(1):  # also where the zip reader checks the CRC
                _bad(f"{name} holds more than its data")
        if d is _dtype.bool_:
            _pickle_reader.clamp_bools(a)
        return a

    reader = _pickle_reader.Reader(pkl, limits.max_depth)
    if full is not None:
        obj, _ = _unpickle_full.load(pkl, reader, open_storage, **full)
        reader.attach(open_storage)
        return obj, reader
    try:
        obj = reader.load()
    except _pickle_reader.DepthError as e:
        raise _Refused(str(e), "max_depth") from None
    reader.attach(open_storage)
    return obj, reader


# --------------------------------------------------------------------------- building objects


def _target_device(saved, map_location):
    """The device a location tag or ``map_location`` names, with PyTorch's error for CUDA."""
    dev = _device.device(map_location if map_location is not None else saved)
    if dev.type == "cuda" and not _device.cuda_available():
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.")
    return _device.get(dev)


def _placer(map_location):
    """``place(array, saved_tag) -> data``, PyTorch's ``map_location`` rules."""
    if map_location is None or isinstance(map_location, (str, _device.device)):
        return lambda a, saved: _arrays.to_device(a, _target_device(saved, map_location))
    if isinstance(map_location, dict):
        return lambda a, saved: _arrays.to_device(
            a, _target_device(saved, map_location.get(saved, saved)))
    if callable(map_location):
        return lambda a, saved: _call_map_location(map_location, a, saved)
    raise TypeError("map_location must be None, a str, a numgrad.device, a dict or a callable, "
                    f"got {type(map_location).__name__}")


def _call_map_location(fn, a, saved):
    """PyTorch's callable: ``fn(storage, location)`` returns the placed storage, or None for
    the default placement. numgrad has no storages: ``storage`` is the CPU tensor."""
    out = fn(_wrap(a), saved)
    if out is None:
        return _arrays.to_device(a, _target_device(saved, None))
    if not isinstance(out, Tensor):
        raise TypeError(f"map_location returned a {type(out).__name__}; it must return a "
                        "tensor or None")
    return out._data


def _place_storages(reader, place):
    """Put each storage where ``map_location`` says and rebuild its tensors on it."""
    for ref in reader.storages.values():
        placed = place(ref.array, ref.location)
        if placed is not ref.array:
            if placed.ndim != 1 or placed.size != ref.numel:
                raise RuntimeError(f"map_location returned a tensor of shape {placed.shape} "
                                   f"for a storage of {ref.numel} elements")
            if placed.__class__ is np.ndarray:
                placed = np.ascontiguousarray(placed)
            else:
                placed = placed.contiguous()
        ref.placed = placed
    for rec in reader.records:
        placed = rec.storage.placed
        if placed is rec.storage.array:
            continue
        data = _pickle_reader.view(placed, rec.offset, rec.shape, rec.strides,
                                   placed.dtype.itemsize)
        for t in rec.tensors:
            t._data = data


def _build_tensor(node, arrays, memo, place):
    k = node["tensor"]
    if k in memo:
        return memo[k]
    t = _wrap(place(arrays[k], node.get("device", "cpu")))
    if node.get("parameter"):
        from numgrad.nn.parameter import Parameter
        t = Parameter(t, node.get("requires_grad", True))
    elif node.get("requires_grad"):
        t.requires_grad_(True)
    memo[k] = t
    return t


def _build(node, arrays, memo, place):
    """The object a checked JSON node describes."""
    kind = next(key for key in node if key in _NODE_FIELDS)
    if kind == "tensor":
        return _build_tensor(node, arrays, memo, place)
    if kind == "ndarray":
        return arrays[node["ndarray"]]
    if kind == "value":
        return node["value"]
    if kind == "dtype":
        return _dtype.get(node["dtype"])
    if kind == "list":
        return [_build(v, arrays, memo, place) for v in node["list"]]
    if kind == "tuple":
        return tuple(_build(v, arrays, memo, place) for v in node["tuple"])
    items = [(_build_key(k, arrays, memo, place), _build(v, arrays, memo, place))
             for k, v in node["dict"]]
    return OrderedDict(items) if node.get("ordered") else dict(items)


def _build_key(node, arrays, memo, place):
    """A dict key: lists become tuples, at any depth, so that it hashes."""
    for kind in ("list", "tuple"):
        if kind in node:
            return tuple(_build_key(v, arrays, memo, place) for v in node[kind])
    return _build(node, arrays, memo, place)


# --------------------------------------------------------------------------- load


def _check_load_args(f, pickle_module, weights_only, mmap, pickle_load_args):
    """PyTorch's rules for load's pickle and mmap arguments."""
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=3)
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    return weights_only


# PyTorch's advice when a weights_only load refuses a global (torch/serialization.py).
UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
    "`torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to "
    "`False` will likely succeed, but it can result in arbitrary code execution. Do it only if "
    "you got the file from a trusted source.")
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default "
    "with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def _weights_only_message(message):
    """The text of the UnpicklingError a refused ``weights_only`` load raises."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have two "
                "options, \033[1mdo those steps only if you trust the source of the "
                f"checkpoint\033[0m. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load "
                "with `weights_only=True` please check the recommended steps in the following "
                f"error message.\n\tWeightsUnpickler error: {message}{_DOCS_MESSAGE}")
    text = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        text += ("Please file an issue with the following so that we can make "
                 "`weights_only=True` compatible with your use case: WeightsUnpickler error: ")
    return f"{text}\n\n{message}{_DOCS_MESSAGE}"


def _read_checked(fh, name, limits, full):
    """``_read`` with every problem in the file raised as load's one RuntimeError (but a
    global ``weights_only`` refuses is PyTorch's UnpicklingError, and what a
    ``weights_only=False`` load's own code raises is raised as it is)."""
    try:
        return _read(fh, limits, full)
    except _pickle_reader.Refused:
        raise
    except _unpickle_full.CallerError as e:
        raise e.error from None
    except _Refused as e:
        raise RuntimeError(f"numgrad.load refused {name}: {e}") from e
    # Not a list of types: on crafted bytes zipfile, zlib, json and NumPy's .npy header parser
    # (ast, tokenize) raise many, undocumented (BadZipFile, struct.error, zlib.error,
    # RecursionError, MemoryError, tokenize.TokenError, ...), and no caller code runs in
    # _read, so whatever it raises means the file is malformed (it stays the __cause__).
    except Exception as e:
        plain = isinstance(e, (_Malformed, _pickle_reader.Malformed))
        detail = str(e) if plain else f"{type(e).__name__}: {e}"
        raise RuntimeError(f"{name} is not a valid numgrad file, or it is truncated or "
                           f"corrupted ({detail})") from e


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         max_bytes=MAX_BYTES, max_ratio=MAX_RATIO, max_json_bytes=MAX_JSON_BYTES,
         max_depth=MAX_DEPTH, **pickle_load_args):
    """Read what ``save`` or ``torch.save`` wrote (zip or legacy format, or numgrad 0.x's
    files), treating the file as untrusted unless ``weights_only=False``.

    With ``weights_only=True`` (the default, as in PyTorch) nothing is unpickled by Python, so
    a file cannot run code: the pickle is interpreted by an allow-listed reader that builds
    only what ``torch.load(weights_only=True)`` builds (tensors, parameters, dtypes,
    ``torch.Size``, devices, containers, numbers, strings, bytes, NumPy arrays) and what
    ``numgrad.serialization.add_safe_globals`` allows; any other global raises PyTorch's
    ``pickle.UnpicklingError``. ``weights_only=False`` (or a ``pickle_module``) loads whole
    modules and any object with Python's unpickler, which runs the code the file names: for
    trusted files only. Tensors that shared a storage when saved share one after
    the load, with their offsets and strides. Each storage is read from its zip member
    straight into its final buffer (no second copy), after its sizes are checked against
    these limits (raise one if you trust a file that needs more; ``math.inf`` lifts it):

    - ``max_bytes`` (64 GiB): all members together, uncompressed, and each array's
      shape x itemsize;
    - ``max_ratio`` (100): uncompressed / compressed size of each member and of the whole
      file (sizes up to 16 MiB are exempt); a stored member must be in the file whole, and
      an array's .npy header must describe exactly the bytes its member holds;
    - ``max_json_bytes`` (16 MiB): the pickle (``data.pkl``), or the JSON description of
      numgrad 0.x's files;
    - ``max_depth`` (100): containers nested in containers.

    Storages and arrays must be of numgrad's dtypes (float32, float64, float16, bfloat16,
    int64, int32, int16, int8, uint8, bool) in little-endian byte order; each tensor's
    offset, size and strides must lie inside its storage. A file over a limit, damaged,
    truncated or malformed in any way raises RuntimeError naming the problem (the
    underlying error is its ``__cause__``); a missing file raises FileNotFoundError.

    ``map_location`` is PyTorch's: None (where each tensor was saved), a device or a str
    (everything there), a dict from saved location tag (``'cpu'``, ``'cuda:0'``) to target,
    or a callable ``(storage, location)`` returning the placed tensor, or None for the
    default (``storage`` is the storage's elements as a 1-D tensor on the CPU; it is called
    once per storage, and the tensors on it are views of what it returns). ``weights_only`` and
    ``pickle_module`` follow PyTorch's argument rules (``pickle_module`` itself is not used:
    Python's ``pickle`` unpickles). ``mmap=True`` needs a path, as in PyTorch, but arrays
    are still read into memory.
    """
    weights_only = _check_load_args(f, pickle_module, weights_only, mmap, pickle_load_args)
    full = None if weights_only else pickle_load_args
    if weights_only:
        _safe_globals.user_allowed()  # PyTorch's errors for malformed entries, before reading
    limits = _Limits(max_bytes=max_bytes, max_ratio=max_ratio, max_json_bytes=max_json_bytes,
                     max_depth=max_depth)
    place = _placer(map_location)
    if mmap:
        with open(f, "rb") as fh:
            if _torch_legacy.is_legacy(fh.read(14)):
                f_name = f"{f}, " if isinstance(f, str) else ""
                raise RuntimeError(
                    "mmap can only be used with files saved with "
                    f"`torch.save({f_name}_use_new_zipfile_serialization=True), please "
                    "torch.save your checkpoint with this option in order to use mmap.")
    try:
        if isinstance(f, (str, os.PathLike)):
            name = os.fspath(f)
            with open(f, "rb") as fh:
                kind, read = _read_checked(fh, name, limits, full)
        else:
            kind, read = _read_checked(f, getattr(f, "name", "<file>"), limits, full)
    except _pickle_reader.Refused as e:
        raise pickle.UnpicklingError(_weights_only_message(str(e))) from None
    if kind == "legacy":
        tree, arrays = read
        return _build(tree, arrays, {}, place)
    obj, reader = read
    _place_storages(reader, place)
    return obj
