"""``numgrad.save``/``numgrad.load`` against PyTorch beyond ``test_save_load.py``: every dtype
both ways (0-d, empty, views sharing storage, strides), a training checkpoint into PyTorch,
PyTorch's legacy (non-zip) format with its hostile-file checks, ``weights_only=False`` for
whole modules, the ``safe_globals`` allow-list, and a malicious pickle that must run nothing."""

import io
import os
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from conftest import raised, requires_torch, torch

import numgrad as ng

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]


class Point:
    """A user class: refused by ``weights_only`` loads until it is allowed."""

    def __init__(self, x, y):
        self.x, self.y = x, y


class Fresh:
    """Pickles a new view of its tensor each time (``__getstate__``)."""

    def __init__(self, w):
        self.w = w

    def __getstate__(self):
        return {"w": self.w[1:]}


class Evil:
    """Pickles as a call of ``os.system`` that would create ``Evil.marker``."""

    marker = None

    def __reduce__(self):
        return os.system, (f"touch {Evil.marker}",)


def _saved(obj, save=ng.save, **kwargs):
    buf = io.BytesIO()
    save(obj, buf, **kwargs)
    return buf.getvalue()


def _values(t):
    return (t.float() if t.dtype in (ng.float16, ng.bfloat16) else t).tolist()


def _torch_values(t):
    return (t.float() if t.dtype in (torch.float16, torch.bfloat16) else t).tolist()


# --------------------------------------------------------------------------- refusals


def test_a_malicious_pickle_runs_nothing_under_weights_only(tmp_path):
    Evil.marker = tmp_path / "marker"
    blob = _saved({"x": Evil()})
    for allowed in [[], [os.system]]:  # os/posix stay blocked even when allowed
        with ng.serialization.safe_globals(allowed), pytest.raises(
                pickle.UnpicklingError, match="whose module (os|posix) is blocked"):
            ng.load(io.BytesIO(blob))
    assert not Evil.marker.exists()


def test_safe_globals_let_a_user_class_through():
    blob = _saved({"p": Point(1, [2])})
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}.Point was not an "):
        ng.load(io.BytesIO(blob))
    with ng.serialization.safe_globals([Point]):
        assert ng.serialization.get_safe_globals() == [Point]
        p = ng.load(io.BytesIO(blob))["p"]
    assert type(p) is Point and (p.x, p.y) == (1, [2])
    assert ng.serialization.get_safe_globals() == []
    ng.serialization.add_safe_globals([(Point, f"{__name__}.Point")])
    try:
        assert type(ng.load(io.BytesIO(blob))["p"]) is Point
    finally:
        ng.serialization.clear_safe_globals()
    assert ng.serialization.get_safe_globals() == []


def test_whole_modules_load_with_weights_only_false():
    ng.manual_seed(0)
    model = ng.nn.Sequential(ng.nn.Linear(3, 4), ng.nn.ReLU(), ng.nn.Linear(4, 2))
    blob = _saved(model)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ng.load(io.BytesIO(blob))
    loaded = ng.load(io.BytesIO(blob), weights_only=False)
    assert type(loaded) is ng.nn.Sequential and type(loaded[0].weight) is ng.nn.Parameter
    x = ng.arange(6.).view(2, 3)
    assert loaded(x).tolist() == model(x).tolist()
    loaded(x).sum().backward()
    assert loaded[0].weight.grad.shape == (4, 3)
    assert loaded[0].weight.data_ptr() != model[0].weight.data_ptr()


def test_objects_whose_state_makes_new_tensors_save():
    w = ng.arange(4.)
    out = ng.load(io.BytesIO(_saved({"f": Fresh(w), "w": w})), weights_only=False)
    assert out["f"].w.tolist() == [1, 2, 3] and out["w"].tolist() == [0, 1, 2, 3]


@requires_torch
def test_refusals_are_pytorchs_error(tmp_path):
    Evil.marker = tmp_path / "marker"
    for obj in [{"x": Evil()}, {"p": Point(1, 2)}, torch.nn.Linear(2, 2)]:
        for zipped in [True, False]:
            blob = _saved(obj, torch.save, _use_new_zipfile_serialization=zipped)
            theirs = raised(torch.load, io.BytesIO(blob), weights_only=True)
            assert theirs[0] == "UnpicklingError"
            assert raised(ng.load, io.BytesIO(blob)) == theirs
    assert not Evil.marker.exists()
    for bad in [[(Point, "a", "b")], [(Point, 1)]]:
        torch.serialization.add_safe_globals(bad)
        ng.serialization.add_safe_globals(bad)
        try:
            blob = _saved({"p": Point(1, 2)}, torch.save)
            assert raised(ng.load, io.BytesIO(blob)) == raised(torch.load, io.BytesIO(blob))
        finally:
            torch.serialization.clear_safe_globals()
            ng.serialization.clear_safe_globals()


@requires_torch
def test_safe_globals_admit_a_user_class_saved_by_torch():
    blob = _saved({"p": Point(3, 4)}, torch.save)
    with ng.serialization.safe_globals([Point]):
        p = ng.load(io.BytesIO(blob))["p"]
    assert type(p) is Point and (p.x, p.y) == (3, 4)


# --------------------------------------------------------------------------- both directions


def _ng_cases(dtype):
    base = (ng.arange(12) % 3).to(getattr(ng, dtype))
    return {"base": base, "t": base.view(3, 4).t(), "tail": base[5:], "zero_d": base[2],
            "empty": base[:0].view(0, 3), "size": ng.Size([3, 4])}


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_both_ways(dtype):
    out = torch.load(io.BytesIO(_saved(_ng_cases(dtype))), weights_only=True)
    assert out["t"].dtype is getattr(torch, dtype) and out["t"].stride() == (1, 4)
    assert out["zero_d"].shape == () and out["empty"].shape == (0, 3)
    assert type(out["size"]) is torch.Size
    assert out["tail"].untyped_storage().data_ptr() == out["base"].untyped_storage().data_ptr()
    theirs = (torch.arange(12) % 3).to(getattr(torch, dtype))
    obj = {"base": theirs, "t": theirs.view(3, 4).t(), "tail": theirs[5:], "zero_d": theirs[2],
           "empty": theirs[:0].view(0, 3)}
    for zipped in [True, False]:
        ours = ng.load(io.BytesIO(_saved(obj, torch.save, _use_new_zipfile_serialization=zipped)))
        for key, t in ours.items():
            assert t.dtype is getattr(ng, dtype) and t.shape == tuple(obj[key].shape)
            assert t.stride() == obj[key].stride() and _values(t) == _torch_values(obj[key])
        itemsize = ours["base"].element_size()
        assert ours["tail"].data_ptr() == ours["base"].data_ptr() + 5 * itemsize


@requires_torch
def test_a_training_checkpoint_resumes_in_pytorch():
    ng.manual_seed(0)
    model = ng.nn.Linear(3, 2)
    opt = ng.optim.Adam(model.parameters(), lr=0.1)
    x = ng.arange(6.).view(2, 3) / 10
    model(x).sum().backward()
    opt.step()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
            "loss": 0.25, "name": "run-1", "config": {"layers": [3, 2], "nested": {"lr": 0.1}}}
    out = torch.load(io.BytesIO(_saved(ckpt)), weights_only=True)
    assert (out["epoch"], out["loss"], out["name"]) == (3, 0.25, "run-1")
    assert out["config"] == {"layers": [3, 2], "nested": {"lr": 0.1}}
    theirs = torch.nn.Linear(3, 2)
    theirs.load_state_dict(out["model"])
    topt = torch.optim.Adam(theirs.parameters(), lr=0.1)
    topt.load_state_dict(out["optimizer"])
    for m, o, inp in [(model, opt, x), (theirs, topt, torch.from_numpy(x.numpy()))]:
        o.zero_grad()
        m(inp).sum().backward()
        o.step()
    np.testing.assert_allclose(theirs.weight.detach().numpy(), model.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- legacy format


@pytest.fixture(scope="module")
def legacy_blob():
    if torch is None:
        pytest.skip("PyTorch is not installed")
    a = torch.arange(6.)
    obj = OrderedDict(a=a, v=a[2:4], t=a.view(2, 3).t(), s=torch.Size([2]), n=3, text="x",
                      b=torch.tensor([True, False]))
    return _saved(obj, torch.save, _use_new_zipfile_serialization=False)


def test_the_legacy_format_loads_with_its_sharing(legacy_blob):
    out = ng.load(io.BytesIO(legacy_blob))
    assert type(out) is OrderedDict and type(out["s"]) is ng.Size and out["text"] == "x"
    assert out["t"].stride() == (1, 3) and out["b"].tolist() == [True, False]
    out["v"][0] = 100
    assert out["a"].tolist() == [0, 1, 100, 3, 4, 5]
    assert ng.load(io.BytesIO(legacy_blob), weights_only=False)["t"].tolist() == \
        [[0, 3], [1, 4], [2, 5]]


def test_legacy_files_cut_flipped_or_huge_give_the_one_error(legacy_blob):
    for n in range(0, len(legacy_blob), 7):
        with pytest.raises(RuntimeError, match="not a valid numgrad file"):
            ng.load(io.BytesIO(legacy_blob[:n]))
    for i in range(0, len(legacy_blob), 3):
        flipped = bytearray(legacy_blob)
        flipped[i] ^= 0x5A
        try:  # a flip in a value's bytes can load (the format has no checksum)
            repr(ng.load(io.BytesIO(bytes(flipped))))  # every tensor readable
        except RuntimeError as e:
            assert "numgrad" in str(e)
        except pickle.UnpicklingError as e:  # a flipped name: PyTorch's refusal
            assert str(e).startswith("Weights only load failed.")
    with pytest.raises(RuntimeError, match="goes on after its last storage"):
        ng.load(io.BytesIO(legacy_blob + b"\0"))
    huge = _saved(torch.zeros(2), torch.save, _use_new_zipfile_serialization=False)
    i = huge.rindex(np.int64(2).tobytes())  # the storage's element count
    huge = huge[:i] + np.int64(10**12).tobytes() + huge[i + 8:]
    with pytest.raises(RuntimeError, match="holds 1000000000000 elements"):
        ng.load(io.BytesIO(huge))
    with pytest.raises(RuntimeError, match="max_bytes"):
        ng.load(io.BytesIO(legacy_blob), max_bytes=16)


def test_legacy_files_refuse_mmap_as_pytorch_does(legacy_blob, tmp_path):
    path = tmp_path / "legacy.pt"
    path.write_bytes(legacy_blob)
    for f in [path, str(path)]:
        assert raised(ng.load, f, mmap=True) == raised(torch.load, f, mmap=True)


def _legacy_file(numel, header_numel, data):
    """A legacy-format file of one float32 tensor of ``numel`` elements, written by hand."""
    def long(v):
        b = pickle.encode_long(v)
        return b"\x8a" + bytes([len(b)]) + b
    main = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\n"
            b"FloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu" + long(numel)
            + b"NtQK\x00K\x02\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR.")
    head = b"".join(pickle.dumps(v, protocol=2) for v in [
        0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}])
    return head + main + pickle.dumps(["0"], protocol=2) + np.int64(header_numel).tobytes() \
        + data


def test_legacy_storages_are_checked_before_allocation():
    assert ng.load(io.BytesIO(_legacy_file(2, 2, bytes(8)))).tolist() == [0, 0]
    with pytest.raises(RuntimeError, match=r"max_bytes"):
        ng.load(io.BytesIO(_legacy_file(10**12, 10**12, bytes(8))))
    with pytest.raises(RuntimeError, match="declares 4000 bytes but the file has 8 left"):
        ng.load(io.BytesIO(_legacy_file(1000, 1000, bytes(8))))
    with pytest.raises(RuntimeError, match="reaches element 1 of a storage of 1"):
        ng.load(io.BytesIO(_legacy_file(1, 1, bytes(4))))


@requires_torch
def test_whole_torch_modules_load_as_numgrad_modules():
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for zipped in [True, False]:
        blob = _saved(theirs, torch.save, _use_new_zipfile_serialization=zipped)
        ours = ng.load(io.BytesIO(blob), weights_only=False)
        assert type(ours) is ng.nn.Sequential and type(ours[0]) is ng.nn.Linear
        np.testing.assert_allclose(ours(ng.from_numpy(x)).detach().numpy(),
                                   theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


MODULES = [("Linear", (3, 2)), ("Conv2d", (2, 3, 3)), ("ConvTranspose1d", (2, 3, 2)),
           ("BatchNorm2d", (3,)), ("LayerNorm", (4,)), ("GroupNorm", (2, 4)),
           ("Embedding", (5, 3)), ("LSTM", (3, 4, 2)), ("GRU", (3, 4)),
           ("MultiheadAttention", (4, 2)), ("Conv1d", (2, 3, 3))]


@requires_torch
@pytest.mark.parametrize("name, args", MODULES, ids=[m[0] for m in MODULES])
def test_module_state_dicts_both_ways(name, args):
    ours, theirs = getattr(ng.nn, name)(*args), getattr(torch.nn, name)(*args)
    theirs.load_state_dict(torch.load(io.BytesIO(_saved(ours.state_dict())), weights_only=True))
    for key, t in theirs.state_dict().items():
        assert _torch_values(t) == _values(ours.state_dict()[key]), key
    theirs = getattr(torch.nn, name)(*args)
    ours.load_state_dict(ng.load(io.BytesIO(_saved(theirs.state_dict(), torch.save))))
    for key, t in ours.state_dict().items():
        assert _values(t) == _torch_values(theirs.state_dict()[key]), key


@requires_torch
@pytest.mark.parametrize("name, kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                          ("AdamW", {"lr": 0.1}), ("RMSprop", {"lr": 0.1})])
def test_optimizer_state_dicts_both_ways(name, kwargs):
    theirs = torch.nn.Linear(2, 2)
    topt = getattr(torch.optim, name)(theirs.parameters(), **kwargs)
    theirs(torch.ones(1, 2)).sum().backward()
    topt.step()
    ours = ng.nn.Linear(2, 2)
    ours.load_state_dict(ng.load(io.BytesIO(_saved(theirs.state_dict(), torch.save))))
    opt = getattr(ng.optim, name)(ours.parameters(), **kwargs)
    opt.load_state_dict(ng.load(io.BytesIO(_saved(topt.state_dict(), torch.save))))
    back = torch.load(io.BytesIO(_saved(opt.state_dict())), weights_only=True)
    assert back["param_groups"] == topt.state_dict()["param_groups"]
    for k, state in topt.state_dict()["state"].items():
        for key, v in state.items():
            assert _torch_values(back["state"][k][key]) == _torch_values(v), key


@requires_torch
def test_safe_globals_map_a_torch_name_to_a_numgrad_class_and_torch_reads_ours():
    theirs = torch.nn.Linear(2, 3)
    blob = _saved(theirs, torch.save)
    with ng.serialization.safe_globals([(ng.nn.Linear, "torch.nn.modules.linear.Linear")]):
        ours = ng.load(io.BytesIO(blob))
    assert type(ours) is ng.nn.Linear
    assert ours(ng.ones(1, 2)).tolist() == theirs(torch.ones(1, 2)).tolist()
    blob = _saved({"p": Point(ng.ones(2), "x")})
    with torch.serialization.safe_globals([Point]):
        p = torch.load(io.BytesIO(blob))["p"]
    assert type(p.x) is torch.Tensor and p.x.tolist() == [1, 1] and p.y == "x"
