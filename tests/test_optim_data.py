"""Optimizers (several steps), schedulers, DataLoader order, save/load, gradient clipping,
each against PyTorch when installed."""

import io

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng

OPTIMIZERS = {
    "sgd": lambda m, p: m.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda m, p: m.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1,
                                             weight_decay=0.01),
    "sgd_nesterov": lambda m, p: m.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
    "sgd_maximize": lambda m, p: m.optim.SGD(p, lr=0.05, momentum=0.5, maximize=True),
    "adam": lambda m, p: m.optim.Adam(p, lr=0.01),
    "adam_amsgrad_wd": lambda m, p: m.optim.Adam(p, lr=0.01, weight_decay=0.1, amsgrad=True),
    "adamw": lambda m, p: m.optim.AdamW(p, lr=0.01, betas=(0.8, 0.99)),
    "rmsprop": lambda m, p: m.optim.RMSprop(p, lr=0.01),
    "rmsprop_centered_momentum": lambda m, p: m.optim.RMSprop(p, lr=0.01, momentum=0.9,
                                                              centered=True, weight_decay=0.01),
}


def _train(m, make_opt, dtype, steps=5):
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(4, 8), m.nn.Tanh(), m.nn.Linear(8, 3)).to(
        getattr(m, dtype))
    opt = make_opt(m, model.parameters())
    rng = np.random.default_rng(1)
    for _ in range(steps):
        x = m.tensor(rng.standard_normal((6, 4)).astype(dtype))
        y = m.tensor(rng.integers(0, 3, 6))
        opt.zero_grad()
        loss = m.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return model, opt


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_steps_match_pytorch(name, dtype):
    ours, oopt = _train(ng, OPTIMIZERS[name], dtype)
    theirs, topt = _train(torch, OPTIMIZERS[name], dtype)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert_close(a, b, **tol, msg=k)
    osd, tsd = oopt.state_dict(), topt.state_dict()
    assert sorted(osd["state"]) == sorted(tsd["state"])
    for k in osd["state"]:
        assert sorted(osd["state"][k]) == sorted(tsd["state"][k])
        for name_, v in osd["state"][k].items():
            if isinstance(v, ng.Tensor):
                assert_close(v, tsd["state"][k][name_], **tol, msg=name_)
    assert [sorted(g) for g in osd["param_groups"]] == [sorted(g) for g in tsd["param_groups"]]


def test_optimizer_without_torch_decreases_loss():
    ng.manual_seed(0)
    w = ng.nn.Parameter(ng.tensor([3.0, -2.0]))
    for make in (lambda p: ng.optim.SGD(p, lr=0.1, momentum=0.9), lambda p: ng.optim.Adam(p, 0.1)):
        opt = make([w])
        with ng.no_grad():
            w.copy_(ng.tensor([3.0, -2.0]))
        for _ in range(50):
            opt.zero_grad()
            (w ** 2).sum().backward()
            opt.step()
        assert (w ** 2).sum().item() < 0.5


def test_optimizer_state_dict_roundtrip_and_groups():
    model, opt = _train(ng, OPTIMIZERS["adam"], "float32", steps=2)
    sd = opt.state_dict()
    opt2 = ng.optim.Adam(model.parameters(), lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    assert_close(opt2.state[model[0].weight]["exp_avg"], opt.state[model[0].weight]["exp_avg"])
    g = ng.optim.SGD([{"params": model[0].parameters()},
                      {"params": model[2].parameters(), "lr": 0.5}], lr=0.1)
    assert [grp["lr"] for grp in g.param_groups] == [0.1, 0.5]
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        ng.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        ng.optim.SGD([model[0].weight * 2], lr=0.1)


@requires_torch
def test_optimizer_repr_matches_pytorch():
    for make in (lambda m, p: m.optim.SGD(p, lr=0.1, momentum=0.9),
                 lambda m, p: m.optim.Adam(p)):
        reprs = [repr(make(m, [m.nn.Parameter(m.ones(2))])) for m in (ng, torch)]
        assert reprs[0] == reprs[1]


@requires_torch
@pytest.mark.parametrize("name", ["step", "cosine"])
def test_schedulers_match_pytorch(name):
    def lrs(m):
        opt = m.optim.SGD([m.nn.Parameter(m.ones(2))], lr=0.3)
        sched = (m.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5) if name == "step"
                 else m.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5, eta_min=0.01))
        out = []
        for _ in range(12):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr()[0])
        return out
    np.testing.assert_allclose(lrs(ng), lrs(torch), rtol=1e-12)


# --------------------------------------------------------------------------- data


def _loader_batches(m, **kwargs):
    x = m.arange(20.0).reshape(10, 2)
    y = m.arange(10)
    ds = m.utils.data.TensorDataset(x, y)
    return [(a.tolist(), b.tolist()) for a, b in m.utils.data.DataLoader(ds, **kwargs)]


@requires_torch
@pytest.mark.parametrize("kwargs", [
    {"batch_size": 3},
    {"batch_size": 3, "drop_last": True},
    {"batch_size": 4, "shuffle": True, "generator_seed": 5},
    {"batch_size": 4, "shuffle": True},
])
def test_dataloader_matches_pytorch(kwargs):
    kwargs = dict(kwargs)
    seed = kwargs.pop("generator_seed", None)
    results = []
    for m in (ng, torch):
        m.manual_seed(123)
        kw = dict(kwargs)
        if seed is not None:
            kw["generator"] = m.Generator().manual_seed(seed)
        results.append([_loader_batches(m, **kw) for _ in range(2)])
    assert results[0] == results[1]


def test_dataloader_basics_without_torch():
    batches = _loader_batches(ng, batch_size=4)
    assert [len(b[1]) for b in batches] == [4, 4, 2]
    assert len(ng.utils.data.DataLoader(list(range(10)), batch_size=4, drop_last=True)) == 2
    ng.manual_seed(0)
    shuffled = _loader_batches(ng, batch_size=10, shuffle=True)[0][1]
    assert sorted(shuffled) == list(range(10)) and shuffled != list(range(10))
    items = list(ng.utils.data.DataLoader([(1.0, 2), (3.0, 4)], batch_size=2))
    assert items[0][0].dtype is ng.float64 and items[0][1].tolist() == [2, 4]
    a, b = ng.utils.data.random_split(range(10), [7, 3], generator=ng.Generator().manual_seed(0))
    assert len(a) == 7 and len(b) == 3 and sorted(list(a) + list(b)) == list(range(10))


# --------------------------------------------------------------------------- save / load


def test_save_load_roundtrip(tmp_path):
    model = ng.nn.Sequential(ng.nn.Linear(3, 4), ng.nn.BatchNorm1d(4))
    obj = {"model": model.state_dict(), "step": 7, "name": "run", "lr": 0.1,
           "pair": (ng.ones(2, dtype=ng.int64), None), "w": ng.nn.Parameter(ng.ones(2))}
    path = tmp_path / "ckpt.pt"
    ng.save(obj, path)
    back = ng.load(path)
    assert list(back["model"]) == list(model.state_dict())
    for k, v in model.state_dict().items():
        assert_close(back["model"][k], v, rtol=0, atol=0)
        assert back["model"][k].dtype is v.dtype
    assert back["step"] == 7 and back["name"] == "run" and back["pair"][1] is None
    assert isinstance(back["w"], ng.nn.Parameter) and back["w"].requires_grad
    buf = io.BytesIO()
    ng.save(ng.arange(5), buf)
    buf.seek(0)
    assert ng.load(buf).tolist() == [0, 1, 2, 3, 4]
    model2 = ng.nn.Sequential(ng.nn.Linear(3, 4), ng.nn.BatchNorm1d(4))
    model2.load_state_dict(back["model"])


def test_load_rejects_corrupt_and_truncated_files(tmp_path):
    path = tmp_path / "ckpt.pt"
    ng.save({"a": ng.ones(100)}, path)
    data = path.read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="not a valid numgrad file, or it is truncated"):
        ng.load(tmp_path / "cut.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a zip at all")
    with pytest.raises(RuntimeError, match="not a valid numgrad file"):
        ng.load(tmp_path / "junk.pt")
    with pytest.raises(TypeError, match="cannot store objects of type"):
        ng.save({"f": lambda: 1}, tmp_path / "x.pt")


def test_load_never_unpickles(tmp_path):
    import pickle
    import zipfile
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("format", "numgrad-save-1")
        z.writestr("data.json", '{"version": "0", "tree": {"ndarray": 0}}')
        z.writestr("arrays/0.npy", pickle.dumps(object()))
    with pytest.raises(RuntimeError, match="not a valid numgrad file"):
        ng.load(path)


# --------------------------------------------------------------------------- clipping


@requires_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_matches_pytorch(norm_type):
    results = []
    for m in (ng, torch):
        m.manual_seed(0)
        model = m.nn.Linear(5, 3)
        (model(m.ones(4, 5)) * 10).sum().backward()
        total = m.nn.utils.clip_grad_norm_(model.parameters(), 1.0, norm_type)
        results.append((total, model.weight.grad, model.bias.grad))
    for a, b in zip(*results):
        assert_close(a, b, rtol=1e-5)
