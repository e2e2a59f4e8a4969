"""``numgrad.save`` / ``numgrad.load`` keep structure: storage sharing between views, offsets
and strides (transposes, expands), torch.Size, requires_grad, Parameter, every dtype, 0-d and
empty tensors, container types, module and optimizer state dicts, checkpoints. The format is
PyTorch's zip format: ``torch.load(weights_only=True)`` reads numgrad's files and
``numgrad.load`` reads ``torch.save``'s. The allow-listed pickle reader refuses what
``weights_only`` refuses, and hostile pickles raise the one RuntimeError."""

import io
import pickle
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest
from conftest import requires_torch, run_on_simulator, torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numgrad as ng

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]


def _saved(obj):
    buf = io.BytesIO()
    ng.save(obj, buf)
    return buf.getvalue()


def _round_trip(obj, **kwargs):
    return ng.load(io.BytesIO(_saved(obj)), **kwargs)


def _values(t):
    """A tensor's values as nested Python numbers (bfloat16 and float16 through float32)."""
    if t.dtype in (ng.float16, ng.bfloat16):
        t = t.float()
    return t.tolist()


def _torch_values(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.tolist()


def _storage_ptr(t):
    return t.untyped_storage().data_ptr()


# --------------------------------------------------------------------------- round trips


def test_views_share_their_base_after_a_load():
    a = ng.arange(6.)
    out = _round_trip({"a": a, "v": a[2:4], "t": a.view(2, 3).t(), "row": a.view(2, 3)[1]})
    out["v"][0] = 100
    assert out["a"].tolist() == [0, 1, 100, 3, 4, 5]
    assert out["t"].stride() == (1, 3) and out["t"].tolist() == [[0, 3], [1, 4], [100, 5]]
    out["row"].add_(1)
    assert out["a"].tolist() == [0, 1, 100, 4, 5, 6]


def test_a_view_saved_alone_keeps_its_offset_and_strides():
    a = ng.arange(12.).view(3, 4)
    out = _round_trip(a[:, 1::2])
    assert out.stride() == (4, 2) and out.tolist() == [[1, 3], [5, 7], [9, 11]]


def test_expanded_tensors_keep_stride_zero_and_the_small_storage():
    small = ng.tensor([1., 2., 3.])
    data = _saved({"e": small[None].expand(1000, 3), "s": small})
    assert len(data) < 4096  # not 1000 x 3 floats
    out = ng.load(io.BytesIO(data))
    assert out["e"].stride() == (0, 1) and out["e"].shape == (1000, 3)
    out["s"][1] = 20
    assert out["e"][999].tolist() == [1, 20, 3]


def test_negative_strides_and_odd_byte_views_are_stored_as_copies():
    a = np.arange(6, dtype=np.float32)
    flipped = ng.from_numpy(a[::-1].copy())
    flipped._data = a[::-1]  # NumPy view with a negative stride
    out = _round_trip(flipped)
    assert out.tolist() == [5, 4, 3, 2, 1, 0] and out.stride() == (1,)


def test_tensors_on_one_foreign_buffer_share_a_storage():
    raw = np.frombuffer(bytearray(64), dtype=np.float32)  # its base is a bytearray
    a, b = ng.from_numpy(raw[:6]), ng.from_numpy(raw[4:10])
    out = _round_trip({"a": a, "b": b})
    out["b"][0] = 7
    assert out["a"].tolist() == [0, 0, 0, 0, 7, 0]


def test_torch_size_devices_dtypes_and_plain_values_keep_their_types():
    obj = {"size": ng.Size([2, 3]), "empty_size": ng.Size([]), "dtype": ng.bfloat16,
           "device": ng.device("cpu"), "cuda": ng.device("cuda", 0), "set": {1, "a", (2, 3)},
           "bytes": b"\x00\xff", "complex": 1 - 2j, "big": -2**100, "floats": [0.1, -0.0],
           "inf": float("inf"), "none": None, "text": "ünï\U0001F600", "bools": (True, False),
           "counter": Counter("aab"), "np": np.arange(6, dtype=np.int16).reshape(2, 3).T,
           "np_scalar": np.float64(0.25)}
    out = _round_trip(obj)
    for k, v in obj.items():
        if k in ("np", "np_scalar"):
            continue
        assert type(out[k]) is type(v) and out[k] == v, k
    assert type(out["size"]) is ng.Size and repr(out["size"]) == "torch.Size([2, 3])"
    assert out["dtype"] is ng.bfloat16
    np.testing.assert_array_equal(out["np"], obj["np"])
    assert out["np"].dtype == np.int16 and out["np_scalar"] == 0.25


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (2, 0, 3), (2, 3)])
def test_every_dtype_and_shape_round_trips(dtype, shape):
    d = getattr(ng, dtype)
    t = (ng.arange(int(np.prod(shape))) % 3).to(d).reshape(shape)
    out = _round_trip(t)
    assert out.dtype is d and out.shape == shape and _values(out) == _values(t)
    assert out.stride() == t.stride() or t.numel() == 0


def test_requires_grad_and_parameters_are_kept():
    leaf = ng.ones(2, requires_grad=True)
    nonleaf = leaf * 2  # PyTorch saves requires_grad; the loaded tensor is a leaf
    frozen = ng.nn.Parameter(ng.ones(3), requires_grad=False)
    obj = {"p": ng.nn.Parameter(ng.ones(2)), "frozen": frozen, "leaf": leaf, "nonleaf": nonleaf,
           "plain": ng.ones(2), "same": leaf}
    out = _round_trip(obj)
    assert type(out["p"]) is ng.nn.Parameter and out["p"].requires_grad
    assert type(out["frozen"]) is ng.nn.Parameter and not out["frozen"].requires_grad
    assert out["leaf"].requires_grad and out["leaf"].is_leaf
    assert out["nonleaf"].requires_grad and out["nonleaf"].is_leaf
    assert not out["plain"].requires_grad
    assert out["same"] is out["leaf"]
    (out["p"] * 3).sum().backward()
    assert out["p"].grad.tolist() == [3, 3]


def test_containers_keep_their_types_order_and_identity():
    shared = [1, 2]
    od = OrderedDict([("b", 1), ("a", 2)])
    od._metadata = {"": {"version": 1}}
    obj = {"od": od, "list": [shared, shared], "tuple": (1, (2, (3,))), "nested": {1: {2: [od]}},
           (1, "k"): "tuple key", 3.5: "float key"}
    out = _round_trip(obj)
    assert list(out) == list(obj)
    assert type(out["od"]) is OrderedDict and list(out["od"]) == ["b", "a"]
    assert out["od"]._metadata == {"": {"version": 1}}
    assert out["list"][0] is out["list"][1]
    assert out["nested"][1][2][0] is out["od"]
    assert out["tuple"] == (1, (2, (3,))) and out[(1, "k")] == "tuple key"


def _model():
    ng.manual_seed(0)
    return ng.nn.Sequential(ng.nn.Linear(3, 4), ng.nn.BatchNorm1d(4), ng.nn.ReLU(),
                            ng.nn.Linear(4, 2))


def _train(model, opt, steps):
    x = ng.arange(24.).view(8, 3) / 10
    for _ in range(steps):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


def test_a_training_checkpoint_resumes_exactly():
    model = _model()
    opt = ng.optim.Adam(model.parameters(), lr=0.01)
    _train(model, opt, 3)
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
            "arch": "mlp", "metrics": {"loss": [0.5, 0.25], "best": {"epoch": 2}}}
    out = _round_trip(ckpt)
    assert type(out["model"]) is OrderedDict and list(out["model"]) == list(ckpt["model"])
    assert out["epoch"] == 3 and out["arch"] == "mlp" and out["metrics"] == ckpt["metrics"]
    resumed = _model()
    resumed.load_state_dict(out["model"])
    resumed_opt = ng.optim.Adam(resumed.parameters(), lr=0.01)
    resumed_opt.load_state_dict(out["optimizer"])
    _train(model, opt, 2)
    _train(resumed, resumed_opt, 2)
    for a, b in zip(model.parameters(), resumed.parameters()):
        assert a.tolist() == b.tolist()


def test_map_location_runs_once_per_storage_and_views_stay_shared():
    a = ng.arange(4.)
    seen = []

    def double(storage, location):
        seen.append((storage.shape, location))
        return storage * 2

    out = _round_trip({"a": a, "v": a[1:3], "b": ng.ones(2)}, map_location=double)
    assert sorted(seen) == [((2,), "cpu"), ((4,), "cpu")]
    assert out["v"].tolist() == [2, 4]
    out["v"][0] = -1
    assert out["a"].tolist() == [0, -1, 4, 6]


def test_records_are_aligned_for_memory_mapping():
    data = _saved({"a": ng.ones(3), "b": ng.arange(5), "s": "x" * 37})
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for info in z.infolist():
            assert info.filename.startswith("archive/")
            start = info.header_offset + 30 + len(info.filename) + len(info.extra)
            assert start % 64 == 0, info.filename


def test_unsupported_arrays_are_a_type_error_and_other_objects_need_weights_only_false():
    for bad in [np.array(["a"]), np.arange(3, dtype=np.uint16)]:
        with pytest.raises(TypeError, match="numgrad.save cannot store"):
            _saved({"x": bad})
    blob = _saved({"x": frozenset([1]), "o": object()})
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL frozenset was not an allowed"):
        ng.load(io.BytesIO(blob))
    out = ng.load(io.BytesIO(blob), weights_only=False)
    assert out["x"] == frozenset([1]) and type(out["o"]) is object


# --------------------------------------------------------------------------- hypothesis


def _make_leaves(draw):
    """Tensors on a few shared bases: the bases, slices, transposes, expands and 0-d
    elements of them, with the in-place writes that show which memory they share."""
    leaves = []
    for _ in range(draw(st.integers(1, 3))):
        d = getattr(ng, draw(st.sampled_from(DTYPES)))
        shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=3)))
        base = (ng.arange(int(np.prod(shape))) % 7).to(d).reshape(shape)
        if d.is_floating_point and draw(st.booleans()):
            base = ng.nn.Parameter(base, requires_grad=draw(st.booleans()))
        leaves.append(base)
        for _ in range(draw(st.integers(0, 3))):
            t = base.detach()
            if t.dim() and t.shape[0]:
                kinds = ["slice", "transpose", "expand"] + (["element"] if t.numel() else [])
                kind = draw(st.sampled_from(kinds))
            else:
                kind = draw(st.sampled_from(["expand", "same"]))
            if kind == "slice":
                start = draw(st.integers(0, t.shape[0] - 1))
                step = draw(st.integers(1, 2))
                t = t[start::step]
            elif kind == "transpose" and t.dim() >= 2:
                t = t.transpose(0, t.dim() - 1)
            elif kind == "expand":
                t = t.unsqueeze(0).expand(draw(st.integers(0, 3)), *t.shape)
            elif kind == "element":
                t = t[tuple(0 for _ in range(t.dim()))]
            leaves.append(t)
    return leaves


def _nest(draw, leaves):
    values = list(leaves) + [ng.Size([2, 1]), "s", 3, None, 1.5]
    order = draw(st.permutations(range(len(values))))
    items = [values[i] for i in order]
    while len(items) > 1:
        k = draw(st.integers(1, min(3, len(items))))
        group, items = items[:k], items[k:]
        kind = draw(st.sampled_from(["list", "tuple", "dict", "ordered"]))
        if kind == "list":
            items.append(group)
        elif kind == "tuple":
            items.append(tuple(group))
        elif kind == "dict":
            items.append({f"k{i}": v for i, v in enumerate(group)})
        else:
            items.append(OrderedDict((f"k{i}", v) for i, v in enumerate(group)))
    return items[0]


def _tensors(obj, out):
    """The tensors in ``obj`` in a fixed walk order (the same for save and load)."""
    if isinstance(obj, (ng.Tensor,)) or (torch is not None and isinstance(obj, torch.Tensor)):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _tensors(v, out)
    elif isinstance(obj, (list, tuple)) and not isinstance(obj, ng.Size):
        for v in obj:
            _tensors(v, out)
    return out


def _same_structure(saved, loaded):
    assert type(loaded) is type(saved)
    if isinstance(saved, ng.Tensor):
        assert loaded.dtype is saved.dtype and loaded.shape == saved.shape
        assert loaded.requires_grad == saved.requires_grad
        if saved.numel():
            assert loaded.stride() == saved.stride()
        assert _values(loaded) == _values(saved)
    elif isinstance(saved, dict):
        assert list(loaded) == list(saved)
        for k in saved:
            _same_structure(saved[k], loaded[k])
    elif isinstance(saved, (list, tuple)):
        assert len(loaded) == len(saved)
        for a, b in zip(saved, loaded):
            _same_structure(a, b)
    else:
        assert loaded == saved


def _writable(t):
    """Not expanded (an in-place write needs each element once) and not empty."""
    return t.numel() > 0 and all(s or n == 1 for s, n in zip(t.stride(), t.shape))


def _write_each(tensors):
    """Fill each writable tensor with its own number, in order: afterwards every value says
    which tensor wrote it last, which shows exactly what memory the tensors share. (16-bit
    floats are written as bit patterns: numgrad stores them but does not compute in them.)"""
    is_torch = bool(tensors) and not isinstance(tensors[0], ng.Tensor)
    with torch.no_grad() if is_torch else ng.no_grad():
        for k, t in enumerate(tensors):
            if not _writable(t):
                continue
            name = str(t.dtype).removeprefix("torch.")
            if name in ("float16", "bfloat16"):
                if is_torch:
                    t.view(torch.int16).fill_(k)
                else:
                    t._data.view(np.int16)[...] = k
            else:
                t.fill_(k % 2 if name == "bool" else k)


SHARING = settings(max_examples=40, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.large_base_example])


@SHARING
@given(st.data())
def test_random_nested_views_round_trip_with_their_sharing(data):
    obj = _nest(data.draw, _make_leaves(data.draw))
    blob = _saved(obj)
    loaded = ng.load(io.BytesIO(blob))
    _same_structure(obj, loaded)
    saved_t, loaded_t = _tensors(obj, []), _tensors(loaded, [])
    _write_each(saved_t)
    _write_each(loaded_t)
    for a, b in zip(saved_t, loaded_t):
        assert _values(a) == _values(b)
    if torch is not None:  # PyTorch's safe loader reads the same file, sharing included
        theirs = _tensors(torch.load(io.BytesIO(blob), weights_only=True), [])
        fresh = _tensors(ng.load(io.BytesIO(blob)), [])
        assert len(theirs) == len(fresh)
        for a, b in zip(fresh, theirs):
            assert str(b.dtype) == str(a.dtype) and tuple(b.shape) == a.shape
            assert _torch_values(b) == _values(a)
            if a.numel():
                assert b.stride() == a.stride()
            assert b.requires_grad == a.requires_grad
            assert isinstance(b, torch.nn.Parameter) == isinstance(a, ng.nn.Parameter)
        _write_each(theirs)
        for a, b in zip(loaded_t, theirs):
            assert _torch_values(b) == _values(a)


# --------------------------------------------------------------------------- PyTorch


@requires_torch
def test_torch_loads_numgrad_files_with_weights_only():
    a = ng.arange(6.)
    model = _model()
    blob = _saved({"a": a, "v": a[2:4], "t": a.view(2, 3).t(), "e": ng.ones(3)[None].expand(4, 3),
                   "size": ng.Size([2, 3]), "sd": model.state_dict(), "dtype": ng.float16,
                   "p": ng.nn.Parameter(ng.ones(2)), "epoch": 7})
    out = torch.load(io.BytesIO(blob), weights_only=True)
    assert type(out["size"]) is torch.Size and out["dtype"] is torch.float16
    assert out["t"].stride() == (1, 3) and out["e"].stride() == (0, 1)
    assert _storage_ptr(out["a"]) == _storage_ptr(out["v"]) == _storage_ptr(out["t"])
    out["v"][0] = 100
    assert out["a"].tolist() == [0, 1, 100, 3, 4, 5]
    assert type(out["sd"]) is OrderedDict and isinstance(out["p"], torch.nn.Parameter)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                 torch.nn.ReLU(), torch.nn.Linear(4, 2))
    theirs.load_state_dict(out["sd"])
    x = np.arange(24, dtype=np.float32).reshape(8, 3) / 10
    model.eval()
    theirs.eval()
    np.testing.assert_allclose(theirs(torch.from_numpy(x)).detach().numpy(),
                               model(ng.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@requires_torch
def test_numgrad_loads_torch_files():
    a = torch.arange(6.)
    model = torch.nn.Linear(2, 3)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    leaf = torch.ones(2, requires_grad=True)
    obj = {"a": a, "v": a[2:4], "t": a.view(2, 3).t(), "e": torch.ones(3)[None].expand(4, 3),
           "size": torch.Size([2, 3]), "sd": model.state_dict(), "opt": opt.state_dict(),
           "nonleaf": leaf * 2, "bf": torch.ones(2, dtype=torch.bfloat16) / 3,
           "p": torch.nn.Parameter(torch.ones(2)), "epoch": 3, "np": np.float64(0.5),
           "dtypes": [torch.bool, torch.int8, torch.float64], "empty": torch.zeros(0, 3)}
    buf = io.BytesIO()
    torch.save(obj, buf)
    out = ng.load(io.BytesIO(buf.getvalue()))
    assert type(out["size"]) is ng.Size and out["dtypes"] == [ng.bool, ng.int8, ng.float64]
    assert out["t"].stride() == (1, 3) and out["e"].stride() == (0, 1)
    assert out["empty"].shape == (0, 3)
    out["v"][0] = 100
    assert out["a"].tolist() == [0, 1, 100, 3, 4, 5]
    assert type(out["sd"]) is OrderedDict and out["sd"]._metadata == obj["sd"]._metadata
    assert out["sd"]["weight"].tolist() == model.weight.tolist()
    assert out["nonleaf"].requires_grad and type(out["p"]) is ng.nn.Parameter
    assert _values(out["bf"]) == _torch_values(obj["bf"]) and out["bf"].dtype is ng.bfloat16
    assert out["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert out["opt"]["state"][0]["exp_avg"].tolist() == opt.state_dict()["state"][0][
        "exp_avg"].tolist()
    ours = ng.nn.Linear(2, 3)
    ours.load_state_dict(out["sd"])
    ng_opt = ng.optim.Adam(ours.parameters())
    ng_opt.load_state_dict(out["opt"])
    assert out["epoch"] == 3 and out["np"] == 0.5


@requires_torch
def test_numgrad_loads_torch_files_saved_to_a_path(tmp_path):
    path = tmp_path / "model.pt"  # the records' folder is named after the file: "model/"
    torch.save({"w": torch.ones(2, 2).t()}, path)
    assert ng.load(path)["w"].tolist() == [[1, 1], [1, 1]]


@requires_torch
def test_what_weights_only_refuses_numgrad_refuses():
    import argparse
    buf = io.BytesIO()
    torch.save({"args": argparse.Namespace(lr=0.1)}, buf)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    with pytest.raises(pickle.UnpicklingError) as ours:
        ng.load(io.BytesIO(buf.getvalue()))
    assert str(ours.value) == str(theirs.value)
    assert "GLOBAL argparse.Namespace was not an allowed global" in str(ours.value)


# --------------------------------------------------------------------------- hostile pickles


def _checkpoint(pkl, records=None, prefix="archive/"):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(prefix + "data.pkl", pkl)
        for key, data in (records or {}).items():
            z.writestr(f"{prefix}data/{key}", data)
    return buf.getvalue()


def _tensor_pickle(offset=0, size=(2,), stride=(1,), numel=2, storage="FloatStorage",
                   requires_grad=False):
    """``_rebuild_tensor_v2`` of one storage, as PyTorch writes it, with any arguments."""
    def num(v):
        data = pickle.encode_long(v)
        return b"\x8a" + bytes([len(data)]) + data

    def tup(vals):
        return b"(" + b"".join(num(v) for v in vals) + b"t"
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
            + b"ctorch\n" + storage.encode() + b"\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu"
            + num(numel) + b"tQ" + num(offset)
            + tup(size) + tup(stride) + (b"\x88" if requires_grad else b"\x89")
            + b"ccollections\nOrderedDict\n)RtR.")


def _refused(data, match):
    with pytest.raises(RuntimeError, match=match):
        ng.load(io.BytesIO(data))


def test_the_crafted_tensor_pickle_is_sound():
    out = ng.load(io.BytesIO(_checkpoint(_tensor_pickle(), {"0": bytes(8)})))
    assert out.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("kwargs, match", [
    (dict(offset=1), "reaches element 2 of a storage of 2"),
    (dict(size=(3,)), "reaches element 2 of a storage of 2"),
    (dict(size=(2, 2), stride=(1, 1)), "stride"),  # size and stride of different lengths
    (dict(size=(2,), stride=(5,)), "reaches element 5"),
    (dict(size=(2,), stride=(-1,)), "negative entry"),
    (dict(size=(-2,)), "negative entry"),
    (dict(offset=-1), "storage offset is -1"),
    (dict(offset=3, size=(0,)), "offset 3 is past its storage's end"),
    (dict(numel=10**12), r"declares 1000000000000 elements of float32, .*max_bytes"),
    (dict(numel=3), "holds 8 bytes for 3 elements"),
    (dict(storage="ComplexFloatStorage"), "names torch.ComplexFloatStorage"),
    (dict(storage="os"), "names torch.os"),
    (dict(storage="LongStorage", requires_grad=True), "int64 requires grad"),
])
def test_tensors_outside_their_storage_are_refused(kwargs, match):
    if kwargs.get("size") == (2, 2):
        kwargs = dict(size=(2, 2), stride=(1,))
    _refused(_checkpoint(_tensor_pickle(**kwargs), {"0": bytes(8)}), match)


@pytest.mark.parametrize("pkl, match", [
    (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n.", "returns .* _Name"),
    (b"\x80\x02](ctorch\nFloatStorage\ne.", "returns .* _StorageType"),
    (b"\x80\x02ccollections\nOrderedDict\n(ccollections\nOrderedDict\ntR.",
     "positional argument"),
    (b"\x80\x02cnumpy\nndarray\n)R.", "not an allowed name"),
    (b"\x80\x02(X\x01\x00\x00\x00a\x81.", "pops an empty stack"),  # NEWOBJ
    (b"\x80\x02(S'x'\ni.", "opcode"),  # INST
    (b"\x80\x02N}b.", "sets the state of a NoneType"),
    (b"\x80\x02]K\x01K\x02s.", "sets items of something that is not a dict"),
    (b"\x80\x02}K\x01a.", "appends to something that is not a list"),
    (b"\x80\x02h\x05.", "memo entry 5"),
    (b"\x80\x02X\xff\xff\xff\x00ab.", "ends in the middle"),
    (b"\x80\x02K\x01K\x02.", "unbalanced"),
    (b"\x80\x02N.N", "bytes after its end"),
    (b"\x80\x02(N.", "unbalanced"),
    (b"\x80\x02e.", "pops a mark it never set"),
    (b"\x80\x02N(X\x07\x00\x00\x00storageNX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQ.",
     "not a storage"),
    (b"\x80\x02" + b"c" + b"x" * 300 + b"\n", "longer than 256 bytes"),
])
def test_hostile_pickles_are_refused(pkl, match):
    _refused(_checkpoint(pkl), match)


def test_deep_tuples_are_refused_before_anything_hashes_them():
    # a tuple nested a million deep, then used as a dict key: hashing it would recurse in C
    pkl = b"\x80\x02}K\x01" + b"\x85" * 1_000_000 + b"K\x02s."
    _refused(_checkpoint(pkl), "max_depth=100")
    # lists nested through the memo, without nested marks, count too
    pkl = b"\x80\x02](]q\x00" + b"]h\x00aq\x00" * 200 + b"e."
    _refused(_checkpoint(pkl), "max_depth=100")


def test_the_pickle_is_limited_by_max_json_bytes():
    data = _checkpoint(b"\x80\x02X\x00\x00\x10\x00" + b"x" * (1 << 20) + b".")
    assert ng.load(io.BytesIO(data)) == "x" * (1 << 20)
    with pytest.raises(RuntimeError, match="max_json_bytes"):
        ng.load(io.BytesIO(data), max_json_bytes=1 << 19)


def test_records_outside_one_folder_or_big_endian_are_refused():
    good = _tensor_pickle()
    _refused(_checkpoint(good, {"0": bytes(8)}, prefix=""), "unexpected member")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", good)
        z.writestr("archive/data/0", bytes(8))
        z.writestr("other/x", b"")
    _refused(buf.getvalue(), "unexpected member 'other/x'")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", good)
        z.writestr("archive/byteorder", b"big")
        z.writestr("archive/data/0", bytes(8))
    _refused(buf.getvalue(), "big-endian")
    _refused(_checkpoint(good), r"record 'archive/data/0' is missing")


def test_bool_storages_hold_only_zero_and_one():
    pkl = _tensor_pickle(size=(3,), numel=3, storage="BoolStorage")
    out = ng.load(io.BytesIO(_checkpoint(pkl, {"0": b"\x00\x02\xff"})))
    assert out.tolist() == [False, True, True] and out._data.view(np.uint8).tolist() == [0, 1, 1]


def test_old_numgrad_files_still_load():
    import json
    buf = io.BytesIO()
    arr = io.BytesIO()
    np.save(arr, np.arange(3, dtype=np.float32))
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("format", "numgrad-save-1")
        z.writestr("data.json", json.dumps({"version": "0", "tree": {"dict": [
            [{"value": "w"}, {"tensor": 0, "requires_grad": True, "parameter": True}]],
            "ordered": True}}))
        z.writestr("arrays/0.npy", arr.getvalue())
    out = ng.load(io.BytesIO(buf.getvalue()))
    assert type(out) is OrderedDict and type(out["w"]) is ng.nn.Parameter
    assert out["w"].tolist() == [0, 1, 2]


def _pickle_sample():
    a = ng.arange(12.).view(3, 4)
    obj = OrderedDict(w=ng.nn.Parameter(a), t=a.t(), row=a[1], e=ng.ones(2)[None].expand(3, 2),
                      size=ng.Size([3, 4]), ints=ng.arange(4, dtype=ng.int16)[::2],
                      meta={"epoch": 2, "np": np.arange(3, dtype=np.uint8), "s": {1, 2}},
                      mask=ng.tensor([True, False]))
    return _saved(obj)


PICKLE_SAMPLE = _pickle_sample()
with zipfile.ZipFile(io.BytesIO(PICKLE_SAMPLE)) as _z:
    PICKLE_MEMBERS = {n: _z.read(n) for n in _z.namelist()}
PKL = "archive/data.pkl"


def _usable(obj, seen=None):
    """Every tensor a load returns can be read whole (its view lies inside its storage)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, ng.Tensor):
        _values(obj)
        repr(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _usable(k, seen)
            _usable(v, seen)
    elif isinstance(obj, (list, tuple, set)):
        for v in obj:
            _usable(v, seen)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_fuzz_mutated_pickles_raise_only_the_one_error(data):
    blob = bytearray(PICKLE_MEMBERS[PKL])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.one_of(st.sampled_from([0, 1, 0x7F, 0xFF]), st.integers(0, 255)))
    if data.draw(st.booleans()):
        blob = blob[:data.draw(st.integers(0, len(blob)))]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, member in PICKLE_MEMBERS.items():
            z.writestr(name, bytes(blob) if name == PKL else member)
    try:
        _usable(ng.load(io.BytesIO(buf.getvalue())))
    except RuntimeError as e:
        assert "numgrad" in str(e), e
    except pickle.UnpicklingError as e:  # a mutated name: PyTorch's refusal of globals
        assert str(e).startswith("Weights only load failed."), e


CUDA_SCRIPT = """
import io, numgrad as ng
a = ng.arange(6., device="cuda")
buf = io.BytesIO()
ng.save({"a": a, "v": a[2:4], "t": a.view(2, 3).t(), "e": a[:3][None].expand(2, 3)}, buf)
for ml in [None, "cpu"]:
    out = ng.load(io.BytesIO(buf.getvalue()), map_location=ml)
    assert out["a"].is_cuda == (ml is None)
    assert out["t"].stride() == (1, 3) and out["e"].stride() == (0, 1), out["t"].stride()
    out["v"].fill_(100)
    assert out["a"].tolist() == [0, 1, 100, 100, 4, 5], out["a"].tolist()
    assert out["t"].tolist() == [[0, 100], [1, 4], [100, 5]] and out["e"].tolist()[1][2] == 100
print("ok")
"""


def test_cuda_views_share_their_storage_on_the_simulator():
    run_on_simulator(CUDA_SCRIPT)
