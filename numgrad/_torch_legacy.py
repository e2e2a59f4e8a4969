"""Reading PyTorch's legacy checkpoint format (``torch.save(...,
_use_new_zipfile_serialization=False)``): five pickles one after another (a magic number,
the protocol version 1001, a description of the machine, the object, the list of its
storage keys), then each storage's bytes, headed by its element count (int64).

The pickles are read by the same allow-listed reader as the zip format's ``data.pkl``
(or by Python's unpickler under ``weights_only=False``), from at most ``max_json_bytes``
of the file; each storage is checked against its declared size, the limits and the bytes
left in the file before its memory is allocated, and the file must end after the last."""

import struct

import numpy as np

from numgrad import _dtype, _pickle_reader, _unpickle_full

MAGIC = 0x1950A86A20F9469CFC6C
PROTOCOL = 1001


def is_legacy(head):
    """Whether a file's first bytes are a pickle of the magic number (a LONG1 of 10 bytes)."""
    return len(head) >= 14 and head[0] == 0x80 and head[2:4] == b"\x8a\x0a" and \
        int.from_bytes(head[4:14], "little", signed=True) == MAGIC


def _bad(message):
    raise _pickle_reader.Malformed(message)


def read(fh, size, limits, full, refuse, fill):
    """``(object, reader)``, as the zip format's reading returns them."""
    fh.seek(0)
    head = fh.read(min(size, limits.max_json_bytes))
    pos = 0

    def one(reader):
        nonlocal pos
        try:
            obj = reader.load(to_end=False)
        except _pickle_reader.Malformed as e:
            if len(head) < size and "ends in the middle" in str(e):
                refuse(f"the pickles are over {limits.max_json_bytes} bytes (max_json_bytes)",
                       "max_json_bytes")
            raise
        pos = reader.pos
        return obj

    def plain(what):
        return one(_pickle_reader.Reader(head, limits.max_depth, pos))

    if plain("magic") != MAGIC:
        _bad("the magic number is not PyTorch's")
    if plain("protocol") != PROTOCOL:
        _bad("the protocol version is not 1001")
    info = plain("sys_info")
    if type(info) is not dict:
        _bad("the description of the machine is not a dict")
    if info.get("little_endian") is not True:
        _bad("the storages are big-endian (numgrad reads little-endian ones)")
    reader = _pickle_reader.Reader(head, limits.max_depth, pos)
    if full is None:
        obj = one(reader)
    else:
        try:
            obj, pos = _unpickle_full.load(head, reader, None, pos, **full)
        except EOFError:
            if len(head) < size:
                refuse(f"the pickles are over {limits.max_json_bytes} bytes (max_json_bytes)",
                       "max_json_bytes")
            raise
    keys = plain("keys")
    if type(keys) is not list or any(type(k) is not str for k in keys) \
            or len(set(keys)) != len(keys):
        _bad("the list of storage keys is not a list of distinct strings")
    if set(keys) != set(reader.storages):
        _bad("the list of storage keys is not the storages the object uses")
    fh.seek(pos)
    total = 0
    arrays = {}
    for key in keys:
        ref = reader.storages[key]
        header = fh.read(8)
        if len(header) != 8:
            _bad(f"the file ends before storage {key}")
        (numel,) = struct.unpack("<q", header)
        if numel != ref.numel:
            _bad(f"storage {key} holds {numel} elements but is referenced with {ref.numel}")
        nbytes = numel * ref.dtype.itemsize
        total += nbytes
        if total > limits.max_bytes:
            refuse(f"storage {key} brings the storages to {total} bytes (max_bytes is "
                   f"{limits.max_bytes})", "max_bytes")
        left = size - fh.tell()
        if nbytes > left:
            _bad(f"storage {key} declares {nbytes} bytes but the file has {left} left")
        a = np.empty(numel, ref.dtype.np)
        fill(fh, a, f"storage {key}")
        if ref.dtype is _dtype.bool_:
            _pickle_reader.clamp_bools(a)
        arrays[key] = a
    if fh.read(1):
        _bad("the file goes on after its last storage")
    reader.attach(lambda key, d, numel: arrays[key])
    return obj, reader
