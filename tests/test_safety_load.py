"""``numgrad.load`` on untrusted files: size limits checked before allocation, arrays streamed
into their one buffer, numgrad's dtypes only, one RuntimeError for anything malformed (with
hypothesis fuzzing), and PyTorch's ``map_location`` / ``weights_only`` / ``mmap`` rules."""

import io
import json
import math
import pickle
import struct
import tokenize
import tracemalloc
import zipfile
import zlib
from contextlib import contextmanager

import numpy as np
import pytest
from conftest import requires_torch, run_on_simulator, torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numgrad as ng
from numgrad import serialization

MiB = 1 << 20
NO_CUDA = pytest.mark.skipif(ng.cuda.is_available(), reason="needs a machine without CUDA")
TORCH_CUDA_MESSAGE = "Attempting to deserialize object on a CUDA device but torch.cuda"


# --------------------------------------------------------------------------- helpers


def _npy(descr, shape, data=b"", fortran=False, version=(1, 0)):
    """An .npy member with any header (numpy's writer does not check it) and raw data."""
    buf = io.BytesIO()
    header = {"descr": descr, "fortran_order": fortran, "shape": shape}
    if version == (1, 0):
        np.lib.format.write_array_header_1_0(buf, header)
    else:
        np.lib.format.write_array_header_2_0(buf, header)
    return buf.getvalue() + data


def _npy_of(a):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _archive(tree, arrays=(), compression=zipfile.ZIP_STORED, fmt=serialization.FORMAT):
    """A checkpoint zip: ``tree`` is a JSON tree (or the raw data.json text), ``arrays`` are
    NumPy arrays or raw .npy bytes."""
    text = tree if isinstance(tree, (str, bytes)) else json.dumps({"version": "0", "tree": tree})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        z.writestr("format", fmt)
        z.writestr("data.json", text)
        for k, a in enumerate(arrays):
            z.writestr(f"arrays/{k}.npy", a if isinstance(a, bytes) else _npy_of(a))
    return buf.getvalue()


def _raw_zip(entries):
    """A zip written by hand, so that its headers can lie. ``entries`` are dicts with name,
    method, crc, size (uncompressed) and data (the stored bytes), or ``same=i`` to point the
    central directory at entry i's record (members overlapping one run of bytes)."""
    out, central, records = bytearray(), bytearray(), []
    for e in entries:
        name = e["name"].encode()
        if "same" in e:
            offset, packed, method, crc, size = records[e["same"]]
        else:
            offset, packed, method, crc, size = (len(out), len(e["data"]), e["method"],
                                                 e["crc"], e["size"])
            out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, packed,
                               size, len(name), 0) + name + e["data"]
        records.append((offset, packed, method, crc, size))
        size = e.get("declare", size)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21,
                               crc, packed, size, len(name), 0, 0, 0, 0, 0, offset) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central),
                      len(out), 0)
    return bytes(out + central + end)


def _stored(name, data, **extra):
    return dict(name=name, method=zipfile.ZIP_STORED, crc=zlib.crc32(data), size=len(data),
                data=data, **extra)


def _deflated(name, data, **extra):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return dict(name=name, method=zipfile.ZIP_DEFLATED, crc=zlib.crc32(data), size=len(data),
                data=c.compress(data) + c.flush(), **extra)


def _head(tree):
    return [_stored("format", serialization.FORMAT.encode()),
            _stored("data.json", json.dumps({"version": "0", "tree": tree}).encode())]


def _load(data, **kwargs):
    return ng.load(io.BytesIO(data), **kwargs)


@contextmanager
def _peak_memory():
    """The peak of traced allocations (NumPy's buffers included) inside the block, in bytes."""
    box = [0]
    tracemalloc.start()
    try:
        yield box
    finally:
        box[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def _refused(data, match, **kwargs):
    with _peak_memory() as peak, pytest.raises(RuntimeError, match=match) as info:
        _load(data, **kwargs)
    assert peak[0] < 4 * MiB, f"refusing took {peak[0] / MiB:.1f} MiB"
    return info.value


# --------------------------------------------------------------------------- 1: size limits


def _bomb(gib=1):
    """A float32 .npy of ``gib`` GiB of zeros, deflated ~1000:1 (the deflate stream is built
    from one 16 MiB piece repeated: after a full flush the compressor starts afresh)."""
    header = _npy("<f4", (gib << 28,))
    chunk = bytes(16 * MiB)
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    first = c.compress(header) + c.flush(zlib.Z_FULL_FLUSH)
    piece = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(header)
    for _ in range(gib * 64):
        crc = zlib.crc32(chunk, crc)
    stream = first + piece * (gib * 64) + c.flush()
    member = dict(name="arrays/0.npy", method=zipfile.ZIP_DEFLATED, crc=crc,
                  size=len(header) + (gib << 30), data=stream)
    return _raw_zip([*_head({"tensor": 0}), member]), stream


@pytest.fixture(scope="module")
def bomb():
    return _bomb()


def test_the_bomb_is_real(bomb):
    data, stream = bomb
    assert len(data) < 1.1 * MiB
    d = zlib.decompressobj(-15)
    assert len(d.decompress(stream[:200_000], 64 * MiB)) == 64 * MiB  # it does inflate


def test_deflate_bomb_is_refused_before_allocation(bomb):
    e = _refused(bomb[0], r"refused .*arrays/0\.npy declares 1024\.0 MiB .*max_ratio=100")
    assert "load it with a larger max_ratio=" in str(e)
    # lifting the ratio leaves max_bytes, still before any allocation
    _refused(bomb[0], r"max_bytes is 512\.0 MiB", max_ratio=math.inf, max_bytes=512 * MiB)


def test_members_sharing_compressed_bytes_are_refused_by_the_total():
    # each member inflates 8 MiB of zeros (under the 16 MiB a member may hold at any ratio),
    # and all 40 point at the same compressed bytes
    zeros = _deflated("arrays/0.npy", _npy("<f4", (2 * MiB,), bytes(8 * MiB)))
    copies = [dict(name=f"arrays/{k}.npy", same=2) for k in range(1, 40)]
    tree = {"list": [{"tensor": k} for k in range(40)]}
    _refused(_raw_zip([*_head(tree), zeros, *copies]), r"members hold 320\.0 MiB in a file of")


def test_npy_header_of_10_to_the_15_elements_is_refused():
    data = _archive({"tensor": 0}, [_npy("<f4", (10**15,), bytes(16))])
    _refused(data, r"declares shape \(1000000000000000,\) of float32, .*max_bytes")
    # with every limit lifted the header still has to match the member's size
    _refused(data, r"holds 16 data bytes", max_bytes=math.inf, max_ratio=math.inf)
    for shape in [(2**62, 2**62), (10**6, 10**6, 10**6)]:
        _refused(_archive({"ndarray": 0}, [_npy("<i8", shape)]), "max_bytes")


@pytest.mark.parametrize("shape, nbytes", [((100,), 396), ((0,), 4), ((), 0), ((5, 5), 104)])
def test_member_shorter_or_longer_than_its_header_is_refused(shape, nbytes):
    data = _archive({"tensor": 0}, [_npy("<f4", shape, bytes(nbytes))])
    _refused(data, rf"declares shape .* but holds {nbytes} data bytes")


def test_zip_headers_that_lie_about_sizes_are_refused():
    arr = _npy_of(np.ones(4, np.float32))
    cases = [
        (_stored("arrays/0.npy", arr, declare=2**31), "stored uncompressed but declares"),
        (_deflated("arrays/0.npy", arr, declare=2**31), "max_ratio"),
        (_deflated("arrays/0.npy", arr, declare=20 * MiB), "max_ratio"),
        (_stored("arrays/0.npy", arr, declare=len(arr) - 1), "stored uncompressed"),
    ]
    for member, match in cases:
        _refused(_raw_zip([*_head({"tensor": 0}), member]), match)
    # a deflated member whose stream inflates past its declared size: the reader stops there
    member = _deflated("arrays/0.npy", arr + bytes(10 * MiB), declare=len(arr))
    _refused(_raw_zip([*_head({"tensor": 0}), member]), "not a valid numgrad file")
    # a lying data.json is read no further than it declares
    lying = _deflated("data.json", b'{"tree": {"value": 1}}' + b" " * (50 * MiB), declare=22)
    _refused(_raw_zip([_stored("format", b"numgrad-save-1"), lying]), "CRC")


def test_each_limit_is_a_keyword(tmp_path):
    zeros = ng.zeros(8 * MiB)  # 32 MiB of zeros deflate ~1000:1
    buf = io.BytesIO()
    ng.save({"z": zeros, "n": [[[1]]]}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as src:
        members = {n: src.read(n) for n in src.namelist()}
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
        for n, b in members.items():
            z.writestr(n, b)
    data = packed.getvalue()
    _refused(data, "max_ratio=100")
    assert _load(data, max_ratio=2000)["z"].sum().item() == 0
    _refused(data, "max_bytes", max_ratio=2000, max_bytes=16 * MiB)
    _refused(buf.getvalue(), "max_json_bytes", max_json_bytes=10)
    _refused(buf.getvalue(), "max_depth=3", max_depth=3)  # a dict holding 3 nested lists
    assert _load(buf.getvalue(), max_depth=4)["n"] == [[[1]]]
    for bad in [-1, "1", None, True]:
        with pytest.raises(ValueError, match="max_bytes must be a non-negative number"):
            _load(buf.getvalue(), max_bytes=bad)


def test_the_json_tree_is_limited_in_depth_and_size():
    deep = {"value": 1}
    for _ in range(150):
        deep = {"list": [deep]}
    _refused(_archive(deep), "max_depth=100")
    key = {"value": 1}
    for _ in range(150):
        key = {"tuple": [key]}
    _refused(_archive({"dict": [[key, {"value": 2}]]}), "max_depth=100")
    # deeper than Python's own recursion limit: json's RecursionError becomes the RuntimeError
    text = '{"tree": ' + '{"list": [' * 100_000 + "]}" * 100_000 + "}"
    e = _refused(_archive(text), "RecursionError")
    assert isinstance(e.__cause__, RecursionError)
    _refused(_archive('{"tree": {"value": "' + "x" * (17 * MiB) + '"}}'), "max_json_bytes")


# --------------------------------------------------------------------------- 2: streaming


def test_a_64_mib_checkpoint_loads_with_no_second_copy(tmp_path):
    path = tmp_path / "big.pt"
    ng.save({"w": ng.ones(16 * MiB), "b": ng.arange(10)}, path)  # 64 MiB of float32
    with _peak_memory() as peak:
        out = ng.load(path)
    assert out["w"].shape == (16 * MiB,) and out["w"][-1].item() == 1.0
    assert out["b"].tolist() == list(range(10))
    # the array itself plus one read chunk, not 2x (128.5 MiB before streaming)
    assert peak[0] < 64 * MiB + 4 * MiB, f"peak {peak[0] / MiB:.1f} MiB"


def test_a_deflated_member_streams_too():
    values = np.arange(2 * MiB, dtype=np.float32)  # 8 MiB, deflates ~4:1
    data = _archive({"tensor": 0}, [values], compression=zipfile.ZIP_DEFLATED)
    with _peak_memory() as peak:
        out = _load(data)
    np.testing.assert_array_equal(out.numpy(), values)
    assert peak[0] < 8 * MiB + 4 * MiB, f"peak {peak[0] / MiB:.1f} MiB"


def test_corrupted_array_bytes_fail_the_crc():
    data = bytearray(_archive({"tensor": 0}, [np.arange(1000, dtype=np.int64)]))
    data[data.index(b"\x01\x00\x00\x00\x00\x00\x00\x00\x02")] = 7
    _refused(bytes(data), "Bad CRC-32")


# --------------------------------------------------------------------------- 3: dtypes, order


SUPPORTED = [np.float32, np.float64, np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_,
             np.float16]
UNSUPPORTED = ["<c8", "<c16", ">f4", ">i8", ">f8", "<U3", "|S3", "|O", "<u2", "<u4",
               "<u8", "<M8[s]", "<m8[s]", "|V8", [("a", "<f4")], [("a", "<f4", (2,))], "<f16"]


@pytest.mark.parametrize("descr", UNSUPPORTED, ids=str)
@pytest.mark.parametrize("node", [{"tensor": 0}, {"ndarray": 0}, {"list": [{"ndarray": 0}]}])
def test_unsupported_dtypes_are_refused_at_load(descr, node):
    itemsize = np.dtype(descr if isinstance(descr, str) else [tuple(f) for f in descr]).itemsize
    data = _archive(node, [_npy(descr, (2,), bytes(2 * itemsize))])
    _refused(data, r"arrays/0\.npy holds dtype .*; numgrad supports bool, uint8, ")


@pytest.mark.parametrize("np_dtype", SUPPORTED)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 3), (2, 3, 4)])
def test_every_supported_dtype_round_trips(np_dtype, shape):
    a = (np.arange(math.prod(shape)) % 3).astype(np_dtype).reshape(shape)
    out = _load(_archive({"tuple": [{"tensor": 0}, {"ndarray": 1}]}, [a, a]))
    assert out[0].dtype is ng.from_numpy(a).dtype and repr(out[0])
    np.testing.assert_array_equal(out[0].numpy(), a)
    assert out[1].dtype == a.dtype and out[1].shape == a.shape
    # little-endian spelled out is native here; big-endian never is
    assert _load(_archive({"ndarray": 0}, [_npy(a.dtype.str, shape, a.tobytes())])).shape == shape


def test_fortran_order_is_read_without_a_copy():
    a = np.asfortranarray(np.arange(24, dtype=np.float64).reshape(2, 3, 4))
    out = _load(_archive({"tuple": [{"tensor": 0, "requires_grad": True}, {"ndarray": 1}]},
                         [a, _npy("<f8", (2, 3, 4), a.tobytes(order="F"), fortran=True)]))
    np.testing.assert_array_equal(out[0].detach().numpy(), a)
    np.testing.assert_array_equal(out[1], a)
    (out[0] * out[0]).sum().backward()
    np.testing.assert_array_equal(out[0].grad.numpy(), 2 * a)


def test_npy_headers_of_other_versions_or_shapes_are_refused():
    ok = _npy("<f4", (1,), bytes(4), version=(2, 0))
    assert _load(_archive({"ndarray": 0}, [ok])).tolist() == [0.0]
    v3 = bytearray(ok)
    v3[6] = 3
    _refused(_archive({"ndarray": 0}, [bytes(v3)]), r"version \(3, 0\)")
    _refused(_archive({"ndarray": 0}, [_npy("<f4", (-1,))]), r"has shape \(-1,\)")
    _refused(_archive({"ndarray": 0}, [pickle.dumps(np.ones(2))]), "not a valid")
    _refused(_archive({"ndarray": 0}, [_npy("<f4", (1,)).replace(b"'<f4'", b"'<f5'")]),
             "not a valid")


# --------------------------------------------------------------------------- 4: one error


ARR = np.ones(3, np.float32)
BAD_TREES = [
    ([], "a node is a list"),
    (5, "a node is a int"),
    ({}, "a node has fields"),
    ({"list": [], "tuple": []}, "a node has fields"),
    ({"list": [], "extra": 1}, "a list node has fields"),
    ({"list": 5}, "a list node holds a int"),
    ({"list": {"a": 1}}, "a list node holds a dict"),
    ({"tensor": 5}, r"arrays/5\.npy is missing"),
    ({"tensor": -1}, "an array index is -1"),
    ({"tensor": "0"}, "an array index is '0'"),
    ({"tensor": True}, "an array index is True"),
    ({"tensor": 0.0}, "an array index is 0.0"),
    ({"tensor": [0]}, r"an array index is \[0\]"),
    ({"ndarray": 1}, r"arrays/1\.npy is missing"),
    ({"ndarray": None}, "an array index is None"),
    ({"tensor": 0, "requires_grad": "yes"}, "requires_grad is 'yes'"),
    ({"tensor": 0, "parameter": 1}, "parameter is 1"),
    ({"tensor": 0, "device": "tpu"}, "device is 'tpu'"),
    ({"tensor": 0, "device": "cuda:x"}, "device is 'cuda:x'"),
    ({"tensor": 0, "device": 0}, "device is 0"),
    ({"value": [1]}, "a value is a list"),
    ({"value": {"a": 1}}, "a value is a dict"),
    ({"dtype": "complex64"}, "unknown dtype 'complex64'"),
    ({"dtype": 3}, "unknown dtype '3'"),
    ({"dtype": ["float32"]}, "unknown dtype"),
    ({"dict": {"a": 1}}, "a dict node holds a dict"),
    ({"dict": [[{"value": 1}]]}, r"not a \[key, value\] pair"),
    ({"dict": [{"value": 1}]}, r"not a \[key, value\] pair"),
    ({"dict": [[{"value": 1}, {"value": 2}, {"value": 3}]]}, "pair"),
    ({"dict": [[{"dict": []}, {"value": 1}]]}, "a dict key is a dict"),
    ({"dict": [[{"tuple": [{"ndarray": 0}]}, {"value": 1}]]}, "a dict key is a ndarray"),
    ({"dict": [[{"value": []}, {"value": 1}]]}, "a value is a list"),
    ({"dict": [], "ordered": "yes"}, "'ordered' is not a bool"),
]


@pytest.mark.parametrize("tree, match", BAD_TREES, ids=lambda x: str(x)[:40])
def test_malformed_trees_raise_the_one_runtime_error(tree, match):
    _refused(_archive(tree, [ARR]), match)


@pytest.mark.parametrize("text", [b"", b"{", b"[]", b'{"version": 1}', b"\xff\xfe\xfd",
                                  b'{"tree": {"tensor": ' + b"9" * 5000 + b"}}"])
def test_malformed_json_raises_the_one_runtime_error(text):
    _refused(_archive(text), "not a valid numgrad file")


def test_tensors_that_cannot_require_grad_are_refused():
    ints = np.arange(3)
    _refused(_archive({"tensor": 0, "requires_grad": True}, [ints]), "requires grad")
    _refused(_archive({"tensor": 0, "parameter": True}, [ints]), "requires grad")  # defaults on
    out = _load(_archive({"tensor": 0, "parameter": True, "requires_grad": False}, [ints]))
    assert isinstance(out, ng.nn.Parameter) and not out.requires_grad


def test_odd_but_valid_trees_load():
    tree = {"dict": [[{"list": [{"list": []}, {"value": 1}]}, {"ndarray": 0}],
                     [{"tensor": 0}, {"tensor": 0}], [{"dtype": "float"}, {"value": None}]],
            "ordered": True}
    out = _load(_archive(tree, [ARR]))
    assert list(out)[0] == ((), 1) and list(out)[2] is ng.float32
    t = list(out)[1]
    assert out[t] is t  # one array index: one tensor


def test_malformed_zips_raise_the_one_runtime_error():
    good = [*_head({"tensor": 0}), _stored("arrays/0.npy", _npy_of(ARR))]
    cases = [
        ([good[0], good[2]], "'data.json' member is missing"),
        ([good[1], good[2]], "'format' member is missing"),
        ([_stored("format", b"numgrad-save-2"), *good[1:]], "the format is not"),
        ([_stored("format", b"x" * 100), *good[1:]], "format holds 100 bytes"),
        ([*good, _stored("evil.py", b"")], "unexpected member 'evil.py'"),
        ([*good, _stored("arrays/01.npy", b"")], "unexpected member 'arrays/01.npy'"),
        ([*good, _stored("arrays/0.npy", b"")], "two members are named 'arrays/0.npy'"),
        ([*good[:2], dict(good[2], method=12)], "compression method 12"),
        ([*good[:2], dict(good[2], method=99)], "compression method 99"),
        (good[:2], r"arrays/0\.npy is missing"),
    ]
    for entries, match in cases:
        _refused(_raw_zip(entries), match)
    encrypted = bytearray(_raw_zip(good))
    cd = encrypted.index(b"PK\x01\x02", encrypted.index(b"arrays/0.npy") + 12)
    encrypted[encrypted.index(b"PK\x01\x02", cd + 1) + 8] = 1  # arrays/0.npy's flag bits
    _refused(bytes(encrypted), "is encrypted")
    for data in [b"", b"PK", b"not a zip", _raw_zip(good)[:-30], _raw_zip(good)[30:]]:
        _refused(data, "not a valid numgrad file")


@pytest.mark.parametrize("error", [
    MemoryError(), OverflowError("x"), RecursionError(), NotImplementedError(), ValueError(),
    KeyError("k"), TypeError(), IndexError(), zipfile.BadZipFile(), EOFError(), zlib.error(),
    struct.error(), json.JSONDecodeError("x", "", 0), UnicodeDecodeError("utf-8", b"", 0, 1, "x"),
    OSError(), RuntimeError("File 'x' is encrypted, password required for extraction"),
    SyntaxError(), tokenize.TokenError("EOF in multi-line statement")],
    ids=lambda e: type(e).__name__)
def test_raw_reader_errors_become_the_one_runtime_error(monkeypatch, error):
    def fail(*args):
        raise error
    monkeypatch.setattr(serialization, "_npy_header", fail)
    e = _refused(_archive({"tensor": 0}, [ARR]), "not a valid numgrad file, or it is truncated "
                 rf"or corrupted \({type(error).__name__}")
    assert e.__cause__ is error


def test_a_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        ng.load(tmp_path / "nope.pt")


# --------------------------------------------------------------------------- fuzzing


def _check_loaded(obj):
    """What a load returned is made of the types save stores, each usable."""
    if isinstance(obj, ng.Tensor):
        assert obj.dtype in (ng.float32, ng.float64, ng.int64, ng.int32, ng.int16, ng.int8,
                             ng.uint8, ng.bool)
        repr(obj)
    elif isinstance(obj, np.ndarray):
        assert obj.dtype in SUPPORTED
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _check_loaded(v)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            hash(k)
            _check_loaded(k)
            _check_loaded(v)
    else:
        assert obj is None or isinstance(obj, (bool, int, float, str, type(ng.float32)))


def _load_or_refuse(data):
    """Only the RuntimeError (or PyTorch's UnpicklingError for a global the mutation made
    that the allow-list refuses), or a good result, with no big allocation on the way."""
    with _peak_memory() as peak:
        try:
            _check_loaded(_load(data))
        except pickle.UnpicklingError as e:
            assert str(e).startswith("Weights only load failed."), e
        except RuntimeError as e:
            assert "numgrad" in str(e) or TORCH_CUDA_MESSAGE in str(e), e
    # a small file may declare up to the 16 MiB every member may hold at any ratio
    assert peak[0] < 24 * MiB, f"{peak[0] / MiB:.1f} MiB"


def _sample():
    obj = {"w": ng.nn.Parameter(ng.ones(2, 3)), "i": ng.arange(4), "m": ng.tensor([True, False]),
           "x": [1, 2.5, "s", None, (ng.float64, {"k": np.arange(3, dtype=np.uint8)})]}
    obj["again"] = obj["w"]
    buf = io.BytesIO()
    ng.save(obj, buf)
    return buf.getvalue()


SAMPLE = _sample()
with zipfile.ZipFile(io.BytesIO(SAMPLE)) as _z:
    MEMBERS = {n: _z.read(n) for n in _z.namelist()}


def _repack(members, compression):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _structural_offsets(data):
    """Byte offsets of the zip's headers, the JSON and the .npy headers: where mutations
    get past the CRC to the parsers."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        offsets = list(range(z.start_dir, len(data)))
        for info in z.infolist():
            offsets += range(info.header_offset, min(len(data), info.header_offset + 200))
    return offsets


VARIANTS = [SAMPLE, _repack(MEMBERS, zipfile.ZIP_DEFLATED)]
OFFSETS = [_structural_offsets(v) for v in VARIANTS]
FUZZ = settings(max_examples=300, deadline=3000, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def test_the_fuzzing_sample_loads():
    for data in VARIANTS:
        out = _load(data)
        assert out["again"] is out["w"] and isinstance(out["w"], ng.nn.Parameter)
        _check_loaded(out)


@FUZZ
@given(st.data())
def test_fuzz_mutated_bytes(data):
    which = data.draw(st.sampled_from([0, 1]))
    blob = bytearray(VARIANTS[which])
    anywhere = st.integers(0, len(blob) - 1)
    where = st.one_of(st.sampled_from(OFFSETS[which]), anywhere)
    byte = st.one_of(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]), st.integers(0, 255))
    for i, b in data.draw(st.lists(st.tuples(where, byte), min_size=1, max_size=6)):
        blob[i] = b
    cut = data.draw(st.none() | st.integers(0, len(blob)))
    _load_or_refuse(bytes(blob[:cut]))


@FUZZ
@given(st.data())
def test_fuzz_mutated_members(data):
    """Members mutated inside a sound zip (right CRCs): the JSON and .npy parsers' turn."""
    members = dict(MEMBERS)
    name = data.draw(st.sampled_from(sorted(members)))
    blob = bytearray(members[name])
    limit = min(len(blob), 160)  # the JSON, or an .npy header
    for i, b in data.draw(st.lists(st.tuples(st.integers(0, limit - 1), st.integers(0, 255)),
                                   min_size=1, max_size=4)):
        blob[i] = b
    if data.draw(st.booleans()):
        blob = blob[:data.draw(st.integers(0, len(blob)))]
    members[name] = bytes(blob)
    compression = data.draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    _load_or_refuse(_repack(members, compression))


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 6), st.floats(), st.text(max_size=4))
LEAVES = st.one_of(
    st.fixed_dictionaries({"value": SCALARS}),
    st.fixed_dictionaries({"dtype": st.sampled_from(["float32", "int64", "float16", "x"])}),
    st.fixed_dictionaries({"tensor": st.one_of(st.integers(-1, 6), SCALARS)},
                          optional={"requires_grad": SCALARS, "parameter": SCALARS,
                                    "device": st.sampled_from(["cpu", "cuda:0", "tpu"])}),
    st.fixed_dictionaries({"ndarray": st.one_of(st.integers(-1, 6), SCALARS)}),
    SCALARS, st.just({}),
)


def _containers(kids):
    pairs = st.one_of(st.tuples(kids, kids).map(list), kids, st.lists(kids, max_size=3))
    return st.one_of(
        st.fixed_dictionaries({"list": st.lists(kids, max_size=4)}),
        st.fixed_dictionaries({"tuple": st.lists(kids, max_size=4)}),
        st.fixed_dictionaries({"dict": st.lists(pairs, max_size=4)},
                              optional={"ordered": SCALARS}),
        st.lists(kids, max_size=3),
        st.dictionaries(st.sampled_from(["list", "dict", "tensor", "value", "x"]), kids,
                        max_size=2),
    )


TREES = st.recursive(LEAVES, _containers, max_leaves=25)
FUZZ_ARRAYS = [np.ones((2, 3), np.float32), np.arange(4), np.array([True]), np.ones(2, np.int8),
               _npy("<f2", (2,), bytes(4)), _npy("<f4", (9,), bytes(4))]


@FUZZ
@given(TREES)
def test_fuzz_crafted_json_trees(tree):
    _load_or_refuse(_archive(tree, FUZZ_ARRAYS))


# --------------------------------------------------------------------------- 5: map_location


def _saved_on_cuda():
    """A checkpoint as save writes it for CUDA tensors (crafted: no GPU is needed)."""
    return _archive({"dict": [[{"value": "p"}, {"tensor": 0, "requires_grad": True,
                                                "parameter": True, "device": "cuda:0"}],
                              [{"value": "c"}, {"tensor": 1, "requires_grad": False,
                                                "parameter": False}]]},
                    [np.ones(2, np.float32), np.arange(3)])


@pytest.mark.parametrize("map_location, scale", [
    (None, 1), ("cpu", 1), (ng.device("cpu"), 1), ({"cpu": "cpu"}, 1), ({"cuda:0": "cuda"}, 1),
    (lambda s, loc: s, 1), (lambda s, loc: None, 1), (lambda s, loc: s * 2, 2)])
def test_map_location_forms_on_the_cpu(map_location, scale):
    buf = io.BytesIO()
    ng.save({"w": ng.nn.Parameter(ng.ones(2)), "n": ng.arange(3)}, buf)
    out = _load(buf.getvalue(), map_location=map_location)
    assert not out["w"].is_cuda and isinstance(out["w"], ng.nn.Parameter)
    assert out["w"].requires_grad and out["n"].dtype is ng.int64
    assert out["w"].tolist() == [scale, scale]


def test_map_location_callable_gets_the_cpu_tensor_and_the_saved_tag():
    seen = []

    def where(storage, location):
        seen.append((type(storage), storage.device, location, storage.tolist()))
        return storage

    out = _load(_saved_on_cuda(), map_location=where)
    assert seen == [(ng.Tensor, ng.device("cpu"), "cuda:0", [1.0, 1.0]),
                    (ng.Tensor, ng.device("cpu"), "cpu", [0, 1, 2])]
    assert isinstance(out["p"], ng.nn.Parameter) and out["p"].requires_grad
    assert not out["p"].is_cuda and not out["c"].requires_grad


@requires_torch
def test_map_location_callable_arguments_match_pytorch():
    seen = []
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2)}, buf)
    buf.seek(0)
    torch.load(buf, map_location=lambda s, loc: seen.append(loc))
    ours = []
    nbuf = io.BytesIO()
    ng.save({"a": ng.ones(2)}, nbuf)
    _load(nbuf.getvalue(), map_location=lambda s, loc: ours.append(loc))
    assert ours == seen == ["cpu"]


@NO_CUDA
@pytest.mark.parametrize("map_location", [None, "cuda", "cuda:0", ng.device("cuda"),
                                          {"cpu": "cuda:0"}, lambda s, loc: None])
def test_cuda_targets_without_cuda_raise_pytorchs_error(map_location):
    with pytest.raises(RuntimeError, match=TORCH_CUDA_MESSAGE):
        _load(_saved_on_cuda(), map_location=map_location)


@NO_CUDA
@pytest.mark.parametrize("map_location", ["cpu", ng.device("cpu"), {"cuda:0": "cpu"},
                                          {"cuda:0": ng.device("cpu")}, lambda s, loc: s])
def test_cuda_tensors_map_to_the_cpu(map_location):
    out = _load(_saved_on_cuda(), map_location=map_location)
    assert not out["p"].is_cuda and out["p"].tolist() == [1.0, 1.0]


@requires_torch
@NO_CUDA
def test_the_cuda_error_is_pytorchs_text():
    buf = io.BytesIO()
    torch.save(torch.ones(1), buf)
    buf.seek(0)
    with pytest.raises(RuntimeError) as theirs:
        torch.load(buf, map_location="cuda")
    with pytest.raises(RuntimeError) as ours:
        _load(_saved_on_cuda(), map_location="cuda")
    assert str(ours.value) == str(theirs.value)


def test_bad_map_locations_are_the_callers_error():
    with pytest.raises(TypeError, match="map_location must be None, a str"):
        _load(_saved_on_cuda(), map_location=5)
    with pytest.raises(TypeError, match="map_location returned a list"):
        _load(_saved_on_cuda(), map_location=lambda s, loc: [s])
    with pytest.raises(ZeroDivisionError):  # the callable's own errors are not wrapped
        _load(_saved_on_cuda(), map_location=lambda s, loc: 1 / 0)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        _load(_saved_on_cuda(), map_location="tpu")


CUDA_SCRIPT = """
import io, numgrad as ng
buf = io.BytesIO()
ng.save({"g": ng.nn.Parameter(ng.ones(2, device="cuda")), "c": ng.arange(3)}, buf)
data = buf.getvalue()
load = lambda **kw: ng.load(io.BytesIO(data), **kw)
out = load()
assert out["g"].is_cuda and not out["c"].is_cuda and isinstance(out["g"], ng.nn.Parameter)
for ml in ["cuda", ng.device("cuda", 0), {"cpu": "cuda:0"}, lambda s, loc: s.cuda()]:
    out = load(map_location=ml)
    assert out["g"].is_cuda and out["c"].is_cuda and out["c"].tolist() == [0, 1, 2], ml
    assert out["g"].requires_grad
seen = []
out = load(map_location=lambda s, loc: seen.append((s.is_cuda, loc)))
assert seen == [(False, "cuda:0"), (False, "cpu")] and out["g"].is_cuda, seen
assert not load(map_location={"cuda:0": "cpu"})["g"].is_cuda
print("ok")
"""


def test_map_location_with_cuda_on_the_simulator():
    run_on_simulator(CUDA_SCRIPT)


# --------------------------------------------------------------------------- weights_only, mmap


def test_pickle_and_mmap_arguments_follow_pytorch(tmp_path):
    path = tmp_path / "c.pt"
    ng.save({"a": ng.ones(2)}, path)
    data = path.read_bytes()
    for kwargs in [{}, {"weights_only": True}, {"weights_only": False},
                   {"pickle_module": pickle}, {"pickle_module": pickle, "weights_only": False}]:
        assert _load(data, **kwargs)["a"].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit "
                                           "pickle_module is specified"):
        _load(data, pickle_module=pickle, weights_only=True)
    with pytest.warns(UserWarning, match="pickle_load_args only works if `weights_only=False`"):
        _load(data, encoding="latin1")
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
        _load(data, mmap=True)
    assert ng.load(path, mmap=True)["a"].tolist() == [1.0, 1.0]
    assert ng.load(str(path), mmap=False)["a"].tolist() == [1.0, 1.0]


@requires_torch
def test_pickle_and_mmap_errors_are_pytorchs(tmp_path):
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2)}, buf)
    nbuf = io.BytesIO()
    ng.save({"a": ng.ones(2)}, nbuf)
    for kwargs in [{"pickle_module": pickle, "weights_only": True}, {"mmap": True}]:
        buf.seek(0)
        with pytest.raises(Exception) as theirs:
            torch.load(buf, **kwargs)
        with pytest.raises(Exception) as ours:
            _load(nbuf.getvalue(), **kwargs)
        assert type(ours.value) is type(theirs.value)
        assert str(ours.value) == str(theirs.value)
