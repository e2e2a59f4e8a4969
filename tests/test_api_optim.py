"""Adagrad and the learning-rate schedulers against PyTorch: optimizer trajectories, state
dicts, learning-rate sequences (exact float equality), warnings and errors; the Adam, AdamW,
RMSprop and Adagrad updates rounding as PyTorch's, bit for bit."""

import math
import warnings

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng

# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------


def _outcome(m, case):
    """("ok", result) or (exception class name, message) of ``case(m)``."""
    try:
        return "ok", case(m)
    except Exception as e:  # noqa: BLE001 - the class and message are what is compared
        return type(e).__name__, str(e)


def same_as_torch(case):
    ours, theirs = _outcome(ng, case), _outcome(torch, case)
    assert ours == theirs, f"\nnumgrad: {ours}\ntorch:   {theirs}"
    return ours


def _warnings_of(fn):
    """The messages of the warnings ``fn()`` gives (all of them, each time)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category.__name__, str(w.message)) for w in caught]


def _rounded(t):
    v = t.detach().tolist()

    def r(x):
        return [r(y) for y in x] if isinstance(x, list) else round(x, 5)
    return r(v)


# ----------------------------------------------------------------------------------------
# Adagrad
# ----------------------------------------------------------------------------------------

ADAGRAD = {
    "default": {},
    "all_options": dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2,
                        eps=1e-6, maximize=True),
    "lr_decay": dict(lr=0.5, lr_decay=0.3),
    "fused": dict(lr=0.05, fused=True),
}


def _train(m, dtype, kwargs, steps=20):
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(4, 8), m.nn.Tanh(), m.nn.Linear(8, 3)).to(
        getattr(m, dtype))
    opt = m.optim.Adagrad(model.parameters(), **kwargs)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        x = m.tensor(rng.standard_normal((6, 4)).astype(dtype))
        y = m.tensor(rng.integers(0, 3, 6))
        opt.zero_grad()
        m.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model, opt


def _np(t):
    return np.array(t.detach().numpy())


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", list(ADAGRAD))
def test_adagrad_trajectory_matches_pytorch(config, dtype):
    ours, oopt = _train(ng, dtype, ADAGRAD[config])
    theirs, topt = _train(torch, dtype, ADAGRAD[config])
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for (name, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_allclose(_np(a), _np(b), **tol, err_msg=name)
    osd, tsd = oopt.state_dict(), topt.state_dict()
    assert osd["param_groups"] == tsd["param_groups"]
    assert sorted(osd["state"]) == sorted(tsd["state"])
    for k, state in osd["state"].items():
        assert sorted(state) == sorted(tsd["state"][k]) == ["step", "sum"]
        assert state["step"].item() == tsd["state"][k]["step"].item() == 20.0
        assert state["step"].dtype.__repr__() == "torch.float32"
        np.testing.assert_allclose(_np(state["sum"]), _np(tsd["state"][k]["sum"]), **tol)


def test_adagrad_update_is_the_formula():
    """Two steps by hand: sum += g^2, p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps),
    with weight decay folded into g (float64, no torch needed)."""
    p0 = np.array([1.0, -2.0, 0.5])
    p = ng.tensor(p0, requires_grad=True)
    opt = ng.optim.Adagrad([p], lr=0.3, lr_decay=0.5, weight_decay=0.1,
                           initial_accumulator_value=0.25, eps=1e-3)
    w, s = p0.copy(), np.full(3, 0.25)
    for t in (1, 2):
        opt.zero_grad()
        (p ** 3).sum().backward()
        g = 3 * w ** 2 + 0.1 * w
        s = s + g * g
        w = w - 0.3 / (1 + (t - 1) * 0.5) * g / (np.sqrt(s) + 1e-3)
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-13)
        np.testing.assert_allclose(opt.state[p]["sum"].numpy(), s, rtol=1e-13)
    assert opt.state[p]["step"].item() == 2.0


def test_adagrad_without_torch_decreases_loss():
    w = ng.nn.Parameter(ng.tensor([3.0, -2.0]))
    opt = ng.optim.Adagrad([w], lr=0.5)
    for _ in range(100):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
    assert (w ** 2).sum().item() < 0.1


@requires_torch
def test_adagrad_state_made_at_construction_and_for_added_groups():
    def case(m):
        a = m.nn.Parameter(m.ones(2, 3))
        b = m.nn.Parameter(m.ones(4, dtype=m.float64))
        opt = m.optim.Adagrad([a], initial_accumulator_value=0.5)
        before = {k: (v["step"].item(), v["sum"].tolist(), str(v["sum"].dtype))
                  for k, v in opt.state_dict()["state"].items()}
        opt.add_param_group({"params": [b], "initial_accumulator_value": 2.0})
        mid = sorted(opt.state_dict()["state"])
        a.grad, b.grad = m.ones(2, 3), m.ones(4, dtype=m.float64)
        opt.step()
        after = {k: (v["step"].item(), _rounded(v["sum"]), str(v["sum"].dtype))
                 for k, v in opt.state_dict()["state"].items()}
        return before, mid, after, _rounded(a), _rounded(b), repr(opt)
    same_as_torch(case)


@requires_torch
def test_adagrad_state_dict_round_trip_continues_the_same_trajectory():
    def run(m, reload):
        m.manual_seed(0)
        w = m.nn.Parameter(m.randn(5))
        opt = m.optim.Adagrad([w], lr=0.2, lr_decay=0.05, weight_decay=0.01)
        for i in range(10):
            if reload and i == 5:
                sd = opt.state_dict()
                opt = m.optim.Adagrad([w], lr=1.0)
                opt.load_state_dict(sd)
            opt.zero_grad()
            ((w - 1) ** 4).sum().backward()
            opt.step()
        return w.detach().tolist(), opt.state_dict()["param_groups"]
    assert run(ng, True) == run(ng, False)
    ours, theirs = run(ng, True), run(torch, True)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-6)
    assert ours[1] == theirs[1]


@requires_torch
def test_adagrad_loads_a_state_dict_with_steps_as_numbers():
    def case(m):
        w = m.nn.Parameter(m.ones(3))
        opt = m.optim.Adagrad([w])
        w.grad = m.ones(3)
        opt.step()
        sd = opt.state_dict()
        sd["state"][0]["step"] = 4
        opt = m.optim.Adagrad([w], lr_decay=0.5)
        opt.load_state_dict(sd)
        opt.step()
        s = opt.state[w]["step"]
        return s.item(), str(s.dtype), _rounded(w), opt.param_groups[0]["lr_decay"]
    same_as_torch(case)


ADAGRAD_BAD = {
    "lr": dict(lr=-0.1),
    "lr_decay": dict(lr_decay=-1.0),
    "weight_decay": dict(weight_decay=-1e-3),
    "initial_accumulator_value": dict(initial_accumulator_value=-0.5),
    "eps": dict(eps=-1e-10),
    "nan lr": dict(lr=float("nan")),
    "fused+differentiable": dict(fused=True, differentiable=True),
    "fused+foreach": dict(fused=True, foreach=True),
    "several first": dict(lr=-1.0, eps=-1.0),
}


@requires_torch
@pytest.mark.parametrize("bad", list(ADAGRAD_BAD))
def test_adagrad_hyper_parameter_errors_match_pytorch(bad):
    kind, message = same_as_torch(
        lambda m: m.optim.Adagrad([m.nn.Parameter(m.ones(2))], **ADAGRAD_BAD[bad]))
    assert kind != "ok"


@requires_torch
def test_adagrad_tensor_lr_and_empty_params_errors_match_pytorch():
    same_as_torch(lambda m: m.optim.Adagrad([m.nn.Parameter(m.ones(2))], lr=m.ones(2)))
    same_as_torch(lambda m: m.optim.Adagrad([]))


GRADS = {
    "smaller": lambda m: m.ones(2),
    "1x3": lambda m: m.ones(1, 3),
    "0-d": lambda m: m.tensor(0.5),
    "double": lambda m: m.ones(3, dtype=m.float64) * 0.5,
    "long": lambda m: m.ones(3, dtype=m.long),
    "bool": lambda m: m.ones(3, dtype=m.bool),
    "non-contiguous": lambda m: m.ones(3, 2)[:, 0] * 0.5,
}


@requires_torch
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("grad", list(GRADS))
def test_adagrad_checks_the_gradient_as_pytorch(grad, maximize):
    def case(m):
        p = m.ones(3, requires_grad=True)
        opt = m.optim.Adagrad([p], lr=0.1, weight_decay=0.1, maximize=maximize)
        p.grad = m.zeros(3)
        p.grad.data = GRADS[grad](m)
        before = p.detach().tolist()
        try:
            opt.step()
        except Exception:
            if m is ng:
                assert p.detach().tolist() == before, "a refused step wrote"
            raise
        return _rounded(p), _rounded(opt.state[p]["sum"])
    same_as_torch(case)


STATES = {
    "sum smaller": ("sum", lambda m: m.ones(2)),
    "sum 0-d": ("sum", lambda m: m.tensor(0.5)),
    "sum double": ("sum", lambda m: m.ones(3, dtype=m.float64)),
    "sum long": ("sum", lambda m: m.ones(3, dtype=m.long)),
    "sum list": ("sum", lambda m: [1.0, 2.0, 3.0]),
    "sum non-contiguous": ("sum", lambda m: m.ones(3, 2)[:, 0] * 2),
    "step float": ("step", lambda m: 3.0),
    "step of two": ("step", lambda m: m.tensor([3.0, 4.0])),
    "step of one": ("step", lambda m: m.tensor([3.0])),
    "no sum": ("sum", lambda m: KeyError),
}


@requires_torch
@pytest.mark.parametrize("state", list(STATES))
def test_adagrad_checks_its_state_as_pytorch(state):
    key, make = STATES[state]

    def case(m):
        p = m.ones(3, requires_grad=True)
        opt = m.optim.Adagrad([p], lr=0.1, lr_decay=0.1)
        p.grad = m.ones(3) * 0.5
        opt.step()
        v = make(m)
        if v is KeyError:
            del opt.state[p][key]
        else:
            opt.state[p][key] = v
        opt.step()
        s = opt.state[p]["sum"]
        return _rounded(p), _rounded(s) if hasattr(s, "tolist") else s
    same_as_torch(case)


def test_adagrad_empty_and_non_contiguous_parameters():
    e = ng.ones(0, requires_grad=True)
    t = ng.ones(3, 2).t().detach().requires_grad_()
    opt = ng.optim.Adagrad([e, t], lr=0.1)
    e.grad, t.grad = ng.ones(0), ng.ones(2, 3)
    opt.step()
    opt.step()
    assert e.shape == (0,)
    # two steps of g = 1: 1 - 0.1 (1/1 + 1/sqrt(2))
    np.testing.assert_allclose(t.detach().numpy(), np.full((2, 3), 1 - 0.1 * (1 + 2 ** -0.5)),
                               rtol=1e-6)


# ----------------------------------------------------------------------------------------
# learning-rate schedulers: sequences
# ----------------------------------------------------------------------------------------

LS = "optim.lr_scheduler"


def _sched(m):
    return m.optim.lr_scheduler


SCHEDULERS = {
    "LambdaLR": lambda m, o: _sched(m).LambdaLR(o, lambda e: 0.95 ** e),
    "LambdaLR per group": lambda m, o: _sched(m).LambdaLR(
        o, [lambda e: 0.95 ** e, lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda m, o: _sched(m).MultiplicativeLR(o, lambda e: 0.97),
    "StepLR": lambda m, o: _sched(m).StepLR(o, 7, 0.5),
    "MultiStepLR": lambda m, o: _sched(m).MultiStepLR(o, [10, 30, 30, 60], 0.3),
    "ExponentialLR": lambda m, o: _sched(m).ExponentialLR(o, 0.96),
    "LinearLR": lambda m, o: _sched(m).LinearLR(o, 0.1, 0.9, 37),
    "LinearLR default": lambda m, o: _sched(m).LinearLR(o),
    "ConstantLR": lambda m, o: _sched(m).ConstantLR(o, 0.3, 13),
    "PolynomialLR": lambda m, o: _sched(m).PolynomialLR(o, 60, 2.5),
    "CosineAnnealingLR": lambda m, o: _sched(m).CosineAnnealingLR(o, 17, 0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: _sched(m).CosineAnnealingWarmRestarts(
        o, 5, 2, 0.001),
    "CosineAnnealingWarmRestarts T_mult 1": lambda m, o: _sched(
        m).CosineAnnealingWarmRestarts(o, 7),
    "OneCycleLR cos": lambda m, o: _sched(m).OneCycleLR(o, [0.5, 0.2], total_steps=101),
    "OneCycleLR linear three_phase": lambda m, o: _sched(m).OneCycleLR(
        o, 0.5, epochs=10, steps_per_epoch=11, anneal_strategy="linear", three_phase=True),
    "OneCycleLR no momentum": lambda m, o: _sched(m).OneCycleLR(
        o, 0.5, total_steps=100, cycle_momentum=False, pct_start=0.25, div_factor=10.0,
        final_div_factor=100.0),
    "CyclicLR triangular2": lambda m, o: _sched(m).CyclicLR(
        o, 0.01, [0.1, 0.2], step_size_up=9, step_size_down=5, mode="triangular2"),
    "CyclicLR exp_range": lambda m, o: _sched(m).CyclicLR(
        o, 0.01, 0.1, step_size_up=9, mode="exp_range", gamma=0.99),
    "CyclicLR scale_fn": lambda m, o: _sched(m).CyclicLR(
        o, 0.01, 0.1, step_size_up=4, scale_fn=lambda x: 0.5 * (1 + math.sin(x)),
        scale_mode="iterations", cycle_momentum=False),
    "SequentialLR": lambda m, o: _sched(m).SequentialLR(
        o, [_sched(m).LinearLR(o, 0.1, total_iters=10), _sched(m).ExponentialLR(o, 0.9),
            _sched(m).CosineAnnealingLR(o, 20)], milestones=[10, 40]),
    "ChainedScheduler": lambda m, o: _sched(m).ChainedScheduler(
        [_sched(m).ConstantLR(o, 0.5, 4), _sched(m).ExponentialLR(o, 0.9)]),
    "ReduceLROnPlateau": lambda m, o: _sched(m).ReduceLROnPlateau(
        o, factor=0.5, patience=3, cooldown=2, min_lr=[0.001, 0.0]),
    "ReduceLROnPlateau max abs": lambda m, o: _sched(m).ReduceLROnPlateau(
        o, mode="max", threshold=0.5, threshold_mode="abs", patience=1, eps=1e-3),
    "ReduceLROnPlateau min abs": lambda m, o: _sched(m).ReduceLROnPlateau(
        o, threshold=0.1, threshold_mode="abs", patience=0, factor=0.7),
    "ReduceLROnPlateau max rel": lambda m, o: _sched(m).ReduceLROnPlateau(
        o, mode="max", patience=2, factor=0.9, min_lr=0.05),
}


def _metric(i):
    return [5, 4, 4, 4, 4, 4, 3, 6][i % 8] + 10.0 / (i + 1)


def _optimizer(m, kind):
    a, b = m.nn.Parameter(m.ones(2)), m.nn.Parameter(m.ones(3))
    groups = [{"params": [a]}, {"params": [b], "lr": 0.03}]
    if kind == "adam":
        return m.optim.Adam(groups, lr=0.1)
    return m.optim.SGD(groups, lr=0.1, momentum=0.9)


def _lr_trace(m, name, kind, steps=100):
    opt = _optimizer(m, kind)
    sched = SCHEDULERS[name](m, opt)
    out = [list(sched.get_last_lr())]
    for i in range(steps):
        opt.step()
        if "Plateau" in name:
            sched.step(_metric(i))
        else:
            sched.step()
        out.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups],
                    [g.get("momentum", g.get("betas")) for g in opt.param_groups],
                    [g.get("initial_lr") for g in opt.param_groups],
                    getattr(sched, "last_epoch", None)))
    return out, sched, opt


@requires_torch
@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_lrs_equal_pytorch_bit_for_bit(name, kind):
    """100 steps over two groups with different lrs: every lr, momentum (or beta1) and
    last_epoch is the same Python float as PyTorch's."""
    ours, osched, oopt = _lr_trace(ng, name, kind)
    theirs, tsched, topt = _lr_trace(torch, name, kind)
    assert ours == theirs
    assert osched.base_lrs == tsched.base_lrs if hasattr(tsched, "base_lrs") else True
    assert sorted(oopt.param_groups[0]) == sorted(topt.param_groups[0])


@requires_torch
@pytest.mark.parametrize("name", [n for n in SCHEDULERS if "Plateau" not in n])
def test_scheduler_state_dict_keys_and_values_match_pytorch(name):
    _, osched, _ = _lr_trace(ng, name, "sgd", steps=30)
    _, tsched, _ = _lr_trace(torch, name, "sgd", steps=30)
    assert _comparable(osched.state_dict()) == _comparable(tsched.state_dict())


def _comparable(state):
    """A state dict with what cannot compare equal across libraries (functions) named."""
    if isinstance(state, dict):
        return {k: _comparable(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_comparable(v) for v in state)
    if callable(state):
        return "<callable>"
    return state


@requires_torch
@pytest.mark.parametrize("name", [n for n in SCHEDULERS if "Plateau" in n])
def test_plateau_state_dict_matches_pytorch(name):
    _, osched, _ = _lr_trace(ng, name, "sgd", steps=30)
    _, tsched, _ = _lr_trace(torch, name, "sgd", steps=30)
    assert osched.state_dict() == tsched.state_dict()


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_state_dict_round_trip_continues_the_sequence(name):
    """Stop after 40 steps, rebuild optimizer and scheduler, load their state dicts (the
    resume order PyTorch documents), go on: the same learning rates as without the
    interruption (numgrad alone)."""
    kind = "adam" if "Cyclic" in name or "OneCycle" in name else "sgd"
    whole = _lr_trace(ng, name, kind, steps=70)[0]
    opt = _optimizer(ng, kind)
    sched = SCHEDULERS[name](ng, opt)
    lrs = [list(sched.get_last_lr())]
    for i in range(70):
        if i == 40:
            osd, ssd = opt.state_dict(), sched.state_dict()
            opt = _optimizer(ng, kind)
            sched = SCHEDULERS[name](ng, opt)  # building it changes the lrs: load after
            opt.load_state_dict(osd)
            sched.load_state_dict(ssd)
        opt.step()
        sched.step(_metric(i)) if "Plateau" in name else sched.step()
        lrs.append(list(sched.get_last_lr()))
    assert lrs == [whole[0]] + [w[0] for w in whole[1:]]


CLOSED_FORM = {
    "StepLR": lambda m, o: _sched(m).StepLR(o, 3, 0.5),
    "MultiStepLR": lambda m, o: _sched(m).MultiStepLR(o, [2, 5, 5], 0.5),
    "ConstantLR": lambda m, o: _sched(m).ConstantLR(o, 0.25, 4),
    "LinearLR": lambda m, o: _sched(m).LinearLR(o, 0.2, 0.8, 6),
    "ExponentialLR": lambda m, o: _sched(m).ExponentialLR(o, 0.9),
    "PolynomialLR": lambda m, o: _sched(m).PolynomialLR(o, 8, 2.0),
    "CosineAnnealingLR": lambda m, o: _sched(m).CosineAnnealingLR(o, 7, 0.01),
    "LambdaLR": lambda m, o: _sched(m).LambdaLR(o, lambda e: 1 / (1 + e)),
    "CosineAnnealingWarmRestarts": lambda m, o: _sched(m).CosineAnnealingWarmRestarts(
        o, 3, 2, 0.01),
    "CosineAnnealingWarmRestarts T_mult 1": lambda m, o: _sched(
        m).CosineAnnealingWarmRestarts(o, 3),
}


@requires_torch
@pytest.mark.parametrize("name", list(CLOSED_FORM))
def test_step_with_epoch_uses_the_closed_form_and_warns_as_pytorch(name):
    def case(m):
        opt = _optimizer(m, "sgd")
        sched = CLOSED_FORM[name](m, opt)
        out = []
        for epoch in [1, 2, 5, 3, 9, 10, 0, 4.5 if "Warm" in name else 4, 30]:
            opt.step()
            warned = _warnings_of(lambda e=epoch: sched.step(e))
            out.append((sched.get_last_lr(), sched.last_epoch, warned))
        return out
    same_as_torch(case)


@requires_torch
def test_resuming_with_last_epoch():
    def case(m):
        opt = _optimizer(m, "sgd")
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"] * 2
        out = []
        for make in (lambda o: _sched(m).StepLR(o, 3, 0.5, last_epoch=7),
                     lambda o: _sched(m).CosineAnnealingLR(o, 10, last_epoch=4),
                     lambda o: _sched(m).ExponentialLR(o, 0.5, last_epoch=2),
                     lambda o: _sched(m).CosineAnnealingWarmRestarts(o, 4, last_epoch=6)):
            sched = make(opt)
            lrs = [sched.get_last_lr()]
            for _ in range(5):
                opt.step()
                sched.step()
                lrs.append(sched.get_last_lr())
            out.append((lrs, sched.last_epoch, sched.base_lrs))
        return out
    same_as_torch(case)
    same_as_torch(lambda m: _sched(m).StepLR(_optimizer(m, "sgd"), 3, last_epoch=5))


# ----------------------------------------------------------------------------------------
# learning-rate schedulers: warnings and errors
# ----------------------------------------------------------------------------------------


@requires_torch
def test_scheduler_step_before_optimizer_step_warns_as_pytorch():
    def case(m):
        opt = _optimizer(m, "sgd")
        sched = _sched(m).StepLR(opt, 2)
        first = _warnings_of(sched.step)  # the optimizer has not stepped yet
        second = _warnings_of(sched.step)  # warned once only
        opt2 = _optimizer(m, "sgd")
        sched2 = _sched(m).ExponentialLR(opt2, 0.5)
        opt2.step()
        in_order = _warnings_of(sched2.step)
        return first, second, in_order
    first, second, in_order = same_as_torch(case)[1]
    assert len(first) == 1 and "before `optimizer.step()`" in first[0][1]
    assert second == in_order == []


@requires_torch
def test_overridden_optimizer_step_and_get_lr_outside_step_warn_as_pytorch():
    def case(m):
        opt = _optimizer(m, "sgd")
        sched = _sched(m).StepLR(opt, 2)
        opt.step = lambda closure=None: None  # replaced after the scheduler was built
        overridden = _warnings_of(sched.step)
        direct = _warnings_of(sched.get_lr)
        other = _sched(m).OneCycleLR(_optimizer(m, "sgd"), 0.1, total_steps=5)
        return overridden, direct, _warnings_of(other.get_lr), _warnings_of(sched.get_last_lr)
    overridden, direct, direct2, last = same_as_torch(case)[1]
    assert len(overridden) == 1 and "overridden" in overridden[0][1]
    assert len(direct) == len(direct2) == 1 and last == []


def test_optimizer_step_is_wrapped_once_and_still_steps():
    w = ng.nn.Parameter(ng.tensor([1.0]))
    opt = ng.optim.SGD([w], lr=0.5)
    ng.optim.lr_scheduler.StepLR(opt, 2)
    wrapped = opt.step
    ng.optim.lr_scheduler.ExponentialLR(opt, 0.9)
    assert opt.step is wrapped and not getattr(opt, "_opt_called", False)
    w.grad = ng.tensor([1.0])
    opt.step()
    assert opt._opt_called is True
    assert w.item() == 0.5


def _step_n(sched, n):
    for _ in range(n):
        sched.optimizer.step()
        sched.step()


SCHEDULER_ERRORS = {
    "not an optimizer": lambda m, o: _sched(m).StepLR(object(), 2),
    "resume without initial_lr": lambda m, o: _sched(m).ExponentialLR(o, 0.5, last_epoch=3),
    "lambdas per group": lambda m, o: _sched(m).LambdaLR(o, [lambda e: 1.0]),
    "multiplicative not callable": lambda m, o: _sched(m).MultiplicativeLR(o, 0.5),
    "ConstantLR factor": lambda m, o: _sched(m).ConstantLR(o, 1.5),
    "LinearLR start": lambda m, o: _sched(m).LinearLR(o, 0.0),
    "LinearLR end": lambda m, o: _sched(m).LinearLR(o, 0.5, 1.5),
    "warm restarts T_0": lambda m, o: _sched(m).CosineAnnealingWarmRestarts(o, 0),
    "warm restarts T_0 float": lambda m, o: _sched(m).CosineAnnealingWarmRestarts(o, 2.0),
    "warm restarts T_mult": lambda m, o: _sched(m).CosineAnnealingWarmRestarts(o, 2, 0),
    "warm restarts eta_min": lambda m, o: _sched(m).CosineAnnealingWarmRestarts(o, 2, 1, "x"),
    "warm restarts negative epoch": lambda m, o: _sched(m).CosineAnnealingWarmRestarts(
        o, 2).step(-1),
    "one cycle no length": lambda m, o: _sched(m).OneCycleLR(o, 0.1),
    "one cycle total_steps": lambda m, o: _sched(m).OneCycleLR(o, 0.1, total_steps=0),
    "one cycle epochs": lambda m, o: _sched(m).OneCycleLR(o, 0.1, epochs=0,
                                                          steps_per_epoch=3),
    "one cycle steps_per_epoch": lambda m, o: _sched(m).OneCycleLR(o, 0.1, epochs=2,
                                                                   steps_per_epoch=1.5),
    "one cycle pct_start": lambda m, o: _sched(m).OneCycleLR(o, 0.1, total_steps=9,
                                                             pct_start=1),
    "one cycle anneal": lambda m, o: _sched(m).OneCycleLR(o, 0.1, total_steps=9,
                                                          anneal_strategy="exp"),
    "one cycle max_lr list": lambda m, o: _sched(m).OneCycleLR(o, [0.1], total_steps=9),
    "one cycle too many steps": lambda m, o: _step_n(_sched(m).OneCycleLR(o, 0.1,
                                                                          total_steps=2), 3),
    "one cycle no momentum": lambda m, o: _sched(m).OneCycleLR(
        m.optim.Adagrad([m.nn.Parameter(m.ones(1))]), 0.1, total_steps=9),
    "cyclic mode": lambda m, o: _sched(m).CyclicLR(o, 0.01, 0.1, mode="sawtooth"),
    "cyclic no momentum": lambda m, o: _sched(m).CyclicLR(
        m.optim.Adagrad([m.nn.Parameter(m.ones(1))]), 0.01, 0.1),
    "cyclic base_lr list": lambda m, o: _sched(m).CyclicLR(o, [0.1, 0.2, 0.3], 0.5),
    "sequential none": lambda m, o: _sched(m).SequentialLR(o, [], []),
    "sequential milestones": lambda m, o: _sched(m).SequentialLR(
        o, [_sched(m).StepLR(o, 2), _sched(m).StepLR(o, 3)], [2, 4]),
    "sequential plateau": lambda m, o: _sched(m).SequentialLR(
        o, [_sched(m).StepLR(o, 2), _sched(m).ReduceLROnPlateau(o)], [2]),
    "sequential other optimizer": lambda m, o: _sched(m).SequentialLR(
        o, [_sched(m).StepLR(_optimizer(m, "adam"), 2)], []),
    "sequential not a scheduler": lambda m, o: _sched(m).SequentialLR(o, [5], []),
    "chained none": lambda m, o: _sched(m).ChainedScheduler([]),
    "chained plateau": lambda m, o: _sched(m).ChainedScheduler([_sched(m).ReduceLROnPlateau(o)]),
    "plateau factor": lambda m, o: _sched(m).ReduceLROnPlateau(o, factor=1.0),
    "plateau mode": lambda m, o: _sched(m).ReduceLROnPlateau(o, mode="low"),
    "plateau threshold mode": lambda m, o: _sched(m).ReduceLROnPlateau(o, threshold_mode="x"),
    "plateau min_lrs": lambda m, o: _sched(m).ReduceLROnPlateau(o, min_lr=[0.1]),
    "plateau not an optimizer": lambda m, o: _sched(m).ReduceLROnPlateau(None),
    "plateau metric": lambda m, o: _sched(m).ReduceLROnPlateau(o).step("bad"),
}


@requires_torch
@pytest.mark.parametrize("name", list(SCHEDULER_ERRORS))
def test_scheduler_errors_match_pytorch(name):
    def case(m):
        SCHEDULER_ERRORS[name](m, _optimizer(m, "sgd"))
    kind, _ = same_as_torch(case)
    assert kind != "ok"


@requires_torch
def test_plateau_with_a_group_added_later_matches_pytorch():
    def case(m, min_lr):
        opt = _optimizer(m, "sgd")
        sched = _sched(m).ReduceLROnPlateau(opt, patience=0, min_lr=min_lr)
        sched.step(1.0)
        opt.add_param_group({"params": [m.nn.Parameter(m.ones(1))], "lr": 0.5})
        for v in (2.0, 3.0):
            sched.step(v)
        return sched.get_last_lr(), sched.min_lrs
    for min_lr in (0.0, [0.0, 0.01]):
        same_as_torch(lambda m, low=min_lr: case(m, low))


@requires_torch
def test_plateau_epoch_argument_warns_as_pytorch():
    def case(m):
        sched = _sched(m).ReduceLROnPlateau(_optimizer(m, "sgd"), patience=0)
        return _warnings_of(lambda: sched.step(1.0, 5)), sched.last_epoch
    same_as_torch(case)


def test_scheduler_values_without_torch():
    opt = _optimizer(ng, "sgd")
    sched = ng.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
    lrs = []
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == [0.1, 0.05, 0.05, 0.025, 0.025]
    assert opt.param_groups[1]["initial_lr"] == 0.03 and sched.base_lrs == [0.1, 0.03]
    assert issubclass(ng.optim.lr_scheduler._LRScheduler, ng.optim.lr_scheduler.LRScheduler)


# ----------------------------------------------------------------------------------------
# Adam, AdamW, RMSprop, Adagrad: PyTorch's roundings
# ----------------------------------------------------------------------------------------

UPDATES = {  # optimizer, hyper-parameters (all given: the reference reads them)
    "adam": ("Adam", dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)),
    "adam_l2_amsgrad_maximize": ("Adam", dict(lr=1e-2, betas=(0.3, 0.9), eps=1e-6,
                                              weight_decay=0.1, amsgrad=True, maximize=True)),
    "adamw": ("AdamW", dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)),
    "rmsprop": ("RMSprop", dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0)),
    "rmsprop_centered_momentum_l2": ("RMSprop", dict(lr=1e-2, alpha=0.3, eps=1e-6,
                                                     weight_decay=0.01, momentum=0.9,
                                                     centered=True, maximize=True)),
    "adagrad": ("Adagrad", dict(lr=0.1, lr_decay=0.01, eps=1e-10, weight_decay=0.01,
                                initial_accumulator_value=0.1, maximize=True)),
}
SHAPES = [(7, 5), (37,), (1000,)]  # odd sizes: PyTorch's vector bodies and scalar tails


def _sqrt(t):
    """A correctly rounded square root. PyTorch's CPU ``sqrt`` (MKL's vector math in x86
    builds) is one unit in the last place off for some values, which the fused kernels do not
    reproduce; the reference uses this one instead."""
    return torch.from_numpy(np.sqrt(t.numpy()))


def _reference_state(name, p):
    kind, h = UPDATES[name]
    st = {"step": torch.tensor(0.0)}
    if kind == "Adagrad":
        st["sum"] = torch.full_like(p, h["initial_accumulator_value"])
    for key in {"Adam": ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"), "AdamW": (
            "exp_avg", "exp_avg_sq"), "RMSprop": ("square_avg", "momentum_buffer", "grad_avg"),
            "Adagrad": ()}[kind]:
        st[key] = torch.zeros_like(p)
    return st


def _reference_update(name, p, g, st):
    """One update of PyTorch's single-tensor algorithm for ``name``, written with torch ops in
    its order (so with its roundings), but ``_sqrt`` for ``sqrt``."""
    kind, h = UPDATES[name]
    st["step"] += 1
    t = st["step"].item()
    g = -g if h.get("maximize") else g
    wd = h["weight_decay"]
    if kind in ("Adam", "AdamW"):
        b1, b2 = h["betas"]
        if wd != 0 and kind == "AdamW":
            p.mul_(1 - h["lr"] * wd)
        elif wd != 0:
            g = g.add(p, alpha=wd)
        st["exp_avg"].lerp_(g, 1 - b1)
        st["exp_avg_sq"].mul_(b2).addcmul_(g, g, value=1 - b2)
        v = st["exp_avg_sq"]
        if h.get("amsgrad"):
            torch.maximum(st["max_exp_avg_sq"], v, out=st["max_exp_avg_sq"])
            v = st["max_exp_avg_sq"]
        denom = (_sqrt(v) / (1 - b2 ** t) ** 0.5).add_(h["eps"])
        p.addcdiv_(st["exp_avg"], denom, value=-(h["lr"] / (1 - b1 ** t)))
    elif kind == "RMSprop":
        a = h["alpha"]
        if wd != 0:
            g = g.add(p, alpha=wd)
        st["square_avg"].mul_(a).addcmul_(g, g, value=1 - a)
        if h.get("centered"):
            st["grad_avg"].lerp_(g, 1 - a)
            avg = _sqrt(st["square_avg"].addcmul(st["grad_avg"], st["grad_avg"], value=-1))
        else:
            avg = _sqrt(st["square_avg"])
        avg = avg.add_(h["eps"])
        if h.get("momentum", 0) > 0:
            st["momentum_buffer"].mul_(h["momentum"]).addcdiv_(g, avg)
            p.add_(st["momentum_buffer"], alpha=-h["lr"])
        else:
            p.addcdiv_(g, avg, value=-h["lr"])
    else:
        if wd != 0:
            g = g.add(p, alpha=wd)
        clr = h["lr"] / (1 + (t - 1) * h["lr_decay"])
        st["sum"].addcmul_(g, g, value=1)
        p.addcdiv_(g, _sqrt(st["sum"]).add_(h["eps"]), value=-clr)


def _gradients(dtype, steps, seed=0):
    rng = np.random.default_rng(seed)
    return [[(rng.standard_normal(s) * (1 + k % 3)).astype(dtype) for s in SHAPES]
            for k in range(steps)]


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(UPDATES))
def test_update_rounds_as_pytorchs_ops(name, dtype):
    """Every operation of PyTorch's update (lerp, addcmul and add(alpha=) as fused
    multiply-adds, addcdiv, the float64 bias corrections and the step count) rounds as in
    PyTorch: 100 steps equal, bit for bit, PyTorch's ops with a correctly rounded sqrt."""
    kind, h = UPDATES[name]
    rng = np.random.default_rng(1)
    start = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    params = [ng.tensor(a.copy(), requires_grad=True) for a in start]
    opt = getattr(ng.optim, kind)(params, **h)
    ref = [torch.tensor(a.copy()) for a in start]
    states = [_reference_state(name, r) for r in ref]
    for grads in _gradients(dtype, 100):
        for p, r, st, g in zip(params, ref, states, grads):
            p.grad = ng.tensor(g)
            _reference_update(name, r, torch.tensor(g), st)
        opt.step()
    for i, (p, r) in enumerate(zip(params, ref)):
        np.testing.assert_array_equal(p.detach().numpy(), r.numpy(), err_msg=f"param {i}")
        for key, v in opt.state[p].items():
            np.testing.assert_array_equal(v.numpy(), states[i][key].numpy(),
                                          err_msg=f"{key} of param {i}")


MOMENTS = {  # state that PyTorch's own optimizers compute without sqrt: bit for bit
    "adam": ("Adam", dict(lr=1e-3), ("exp_avg", "exp_avg_sq")),
    "adam_small_beta1": ("Adam", dict(lr=1e-2, betas=(0.4, 0.9)), ("exp_avg", "exp_avg_sq")),
    "adamw": ("AdamW", dict(lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1),
              ("exp_avg", "exp_avg_sq")),
    "rmsprop_centered": ("RMSprop", dict(lr=1e-2, centered=True), ("square_avg", "grad_avg")),
    "adagrad": ("Adagrad", dict(lr=0.1, lr_decay=0.01), ("sum",)),
}


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(MOMENTS))
def test_moments_equal_pytorchs_optimizers_bit_for_bit(name, dtype):
    """Fed the same gradients for 300 steps, the moving averages (and step counts) equal those
    of PyTorch's optimizers bit for bit; the parameters, which also go through PyTorch's sqrt,
    stay within float rounding."""
    kind, h, keys = MOMENTS[name]
    rng = np.random.default_rng(1)
    start = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    ours = [ng.tensor(a.copy(), requires_grad=True) for a in start]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in start]
    opts = getattr(ng.optim, kind)(ours, **h), getattr(torch.optim, kind)(theirs, **h)
    for grads in _gradients(dtype, 300):
        for p, q, g in zip(ours, theirs, grads):
            p.grad, q.grad = ng.tensor(g), torch.tensor(g)
        for opt in opts:
            opt.step()
    for i, (p, q) in enumerate(zip(ours, theirs)):
        for key in (*keys, "step"):
            np.testing.assert_array_equal(opts[0].state[p][key].numpy(),
                                          opts[1].state[q][key].numpy(), err_msg=f"{key} {i}")
        tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), **tol)


def test_adam_bias_correction_is_pythons_power():
    """PyTorch takes ``bias_correction2 ** 0.5`` in Python: the C library's pow, which differs
    from a correctly rounded sqrt in the last bit for some steps (where LLVM, given a constant
    exponent 0.5, would call sqrt). Step 1,270 with beta2 = 0.999 is one where float64
    parameters show the difference (with glibc's pow)."""
    from numgrad.kernels.cpu import nn as kernels
    b1, b2, lr, eps, t = 0.9, 0.999, 1e-3, 1e-8, 1270
    p, g, m = np.zeros(1), np.zeros(1), np.ones(1)
    v, step = np.array([0.3 / b2]), np.array([t - 1.0])
    kernels.adam_step(p, g, m, v, p, step, lr, b1, b2, eps, 0.0, False, False, False)

    def expected(root):
        return -(lr / (1 - b1 ** t)) * m[0] / (math.sqrt(v[0]) / root(1 - b2 ** t) + eps)

    assert step[0] == t and m[0] == 0.9 and v[0] == 0.3 / b2 * b2
    assert p[0] == expected(lambda x: x ** 0.5)
