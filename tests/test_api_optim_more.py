"""Adamax, NAdam, RAdam, Adadelta and LBFGS against PyTorch: parameter trajectories over 20
steps, constructor errors (class and message), state dict layout and round trip; LBFGS's
iterates on Rosenbrock's function and on a small recurrent model's closure, with and without
the strong-Wolfe line search."""

import numpy as np
import pytest
from conftest import raised, requires_torch, torch

import numgrad as ng

pytestmark = requires_torch

CONFIGS = [
    ("Adamax", {}),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, maximize=True)),
    ("NAdam", {}),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01)),
    ("NAdam", dict(weight_decay=0.1, maximize=True)),
    ("RAdam", {}),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.1)),  # rectified from step 2
    ("Adadelta", {}),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
]
STATE_KEYS = {"Adamax": ["exp_avg", "exp_inf", "step"],
              "NAdam": ["exp_avg", "exp_avg_sq", "mu_product", "step"],
              "RAdam": ["exp_avg", "exp_avg_sq", "step"],
              "Adadelta": ["acc_delta", "square_avg", "step"]}


def _batches(steps, dtype):
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((6, 4)).astype(dtype), rng.integers(0, 3, 6))
            for _ in range(steps)]


def _model(m, dtype):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Linear(4, 8), m.nn.Tanh(), m.nn.Linear(8, 3)).to(
        getattr(m, dtype))


def _run(m, model, opt, batches):
    for x, y in batches:
        opt.zero_grad()
        m.nn.functional.cross_entropy(model(m.tensor(x)), m.tensor(y)).backward()
        opt.step()


def _np(t):
    return np.array(t.detach().numpy())


def _trajectory(m, name, kwargs, dtype, steps=20):
    model = _model(m, dtype)
    opt = getattr(m.optim, name)(model.parameters(), **kwargs)
    _run(m, model, opt, _batches(steps, dtype))
    return model, opt


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{c[0]}{i}" for i, c in enumerate(CONFIGS)])
def test_trajectory_and_state_match_pytorch(name, kwargs, dtype):
    if dtype == "float64" and kwargs:
        pytest.skip("float64: the defaults only (one kernel build per dtype)")
    ours, oopt = _trajectory(ng, name, kwargs, dtype)
    theirs, topt = _trajectory(torch, name, kwargs, dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_allclose(_np(a), _np(b), **tol, err_msg=k)
    osd, tsd = oopt.state_dict(), topt.state_dict()
    assert osd["param_groups"] == tsd["param_groups"]
    assert sorted(osd["state"]) == sorted(tsd["state"])
    for k, state in osd["state"].items():
        assert sorted(state) == sorted(tsd["state"][k]) == STATE_KEYS[name]
        for key, v in state.items():
            w = tsd["state"][k][key]
            assert repr(v.dtype) == repr(w.dtype) and v.shape == w.shape, key
            np.testing.assert_allclose(_np(v), _np(w), **tol, err_msg=key)
        assert state["step"].item() == 20.0


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Adadelta"])
def test_state_dict_round_trip_continues_the_trajectory(name):
    batches = _batches(12, "float32")
    model = _model(ng, "float32")
    opt = getattr(ng.optim, name)(model.parameters(), lr=0.01)
    _run(ng, model, opt, batches)
    straight = [_np(p) for p in model.parameters()]

    model = _model(ng, "float32")
    opt = getattr(ng.optim, name)(model.parameters(), lr=0.01)
    _run(ng, model, opt, batches[:6])
    sd = opt.state_dict()
    for s in sd["state"].values():  # steps saved as numbers (older checkpoints) load as tensors
        s["step"] = float(s["step"])
    opt2 = getattr(ng.optim, name)(model.parameters(), lr=0.01)
    opt2.load_state_dict(sd)
    assert all(isinstance(s["step"], ng.Tensor) for s in opt2.state.values())
    _run(ng, model, opt2, batches[6:])
    for a, b in zip(straight, model.parameters()):
        np.testing.assert_array_equal(a, _np(b))


def test_non_contiguous_parameter_takes_the_checked_path():
    for m in (ng, torch):
        w = m.zeros(3, 4).t()
        w.requires_grad_(True)
        w.grad = m.ones(4, 3)
        opt = m.optim.NAdam([w], lr=0.1)
        opt.step()
        opt.step()
        if m is ng:
            ours = _np(w)
        else:
            np.testing.assert_allclose(ours, _np(w), rtol=1e-6)


ERRORS = [
    ("Adamax", dict(lr=-1.0)), ("Adamax", dict(eps=-1e-3)), ("Adamax", dict(betas=(1.0, 0.9))),
    ("Adamax", dict(betas=(0.9, -0.1))), ("Adamax", dict(weight_decay=-1)),
    ("NAdam", dict(momentum_decay=-1.0)), ("NAdam", dict(lr=float("nan"))),
    ("RAdam", dict(betas=(0.9, 1.0))), ("RAdam", dict(eps=-1.0)),
    ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(rho=-0.1)), ("Adadelta", dict(lr=-0.5)),
    ("LBFGS", dict(lr=-1.0)),
]


@pytest.mark.parametrize("name,kwargs", ERRORS)
def test_constructor_errors_are_pytorchs(name, kwargs):
    def build(m):
        return getattr(m.optim, name)([m.zeros(2, requires_grad=True)], **kwargs)
    ours, theirs = raised(build, ng), raised(build, torch)
    assert ours == theirs and ours is not None


def test_other_errors_are_pytorchs():
    for name in ("Adamax", "NAdam", "RAdam", "Adadelta"):
        cls = getattr(ng.optim, name)
        assert raised(cls, [ng.zeros(2, requires_grad=True)], lr=ng.ones(2)) == (
            "ValueError", "Tensor lr must be 1-element")

    def groups(m):
        return m.optim.LBFGS([{"params": [m.zeros(1, requires_grad=True)]},
                              {"params": [m.zeros(1, requires_grad=True)]}])

    def no_closure(m):
        m.optim.LBFGS([m.zeros(1, requires_grad=True)]).step()

    def bad_search(m):
        x = m.ones(2, requires_grad=True)
        opt = m.optim.LBFGS([x], line_search_fn="armijo")

        def closure():
            opt.zero_grad()
            loss = (x * x).sum()
            loss.backward()
            return loss
        opt.step(closure)
    for case in (groups, no_closure, bad_search):
        assert raised(case, ng) == raised(case, torch) is not None


# ----------------------------------------------------------------------------------------
# LBFGS
# ----------------------------------------------------------------------------------------


def _rosenbrock(m, line_search, steps, max_iter=10):
    x = m.tensor([-1.5, 2.0], dtype=m.float64, requires_grad=True)
    opt = m.optim.LBFGS([x], lr=1, max_iter=max_iter, history_size=10,
                        line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss
    iterates = []
    for _ in range(steps):
        opt.step(closure)
        iterates.append(x.detach().tolist())
    return np.array(iterates), opt.state[x]


def test_lbfgs_rosenbrock_strong_wolfe_matches_pytorch():
    ours, ostate = _rosenbrock(ng, "strong_wolfe", 5)
    theirs, tstate = _rosenbrock(torch, "strong_wolfe", 5)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(ours[-1], [1.0, 1.0], atol=1e-4)
    assert ostate["func_evals"] == tstate["func_evals"]
    assert ostate["n_iter"] == tstate["n_iter"]


def test_lbfgs_rosenbrock_fixed_step_matches_pytorch():
    # without a line search Rosenbrock's valley amplifies the dot products' last-bit
    # differences (BLAS's summation order) after some 20 iterations: compare the first 10
    ours, ostate = _rosenbrock(ng, None, 1)
    theirs, tstate = _rosenbrock(torch, None, 1)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)
    assert ostate["func_evals"] == tstate["func_evals"] == 10


def _sequence_model(m, line_search, steps=2):
    m.manual_seed(0)
    rnn, head = m.nn.LSTM(2, 5, batch_first=True), m.nn.Linear(5, 1)
    params = list(rnn.parameters()) + list(head.parameters())
    rng = np.random.default_rng(0)
    x = m.tensor(rng.standard_normal((3, 6, 2)).astype("float32"))
    y = m.tensor(rng.standard_normal((3, 6, 1)).astype("float32"))
    opt = m.optim.LBFGS(params, lr=0.5, max_iter=5, history_size=4, line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        out, _ = rnn(x)
        loss = ((head(out) - y) ** 2).mean()
        loss.backward()
        return loss
    losses = [opt.step(closure).item() for _ in range(steps)]
    return losses, [_np(p) for p in params], opt


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_sequence_model_matches_pytorch(line_search):
    ol, op, oopt = _sequence_model(ng, line_search)
    tl, tp, topt = _sequence_model(torch, line_search)
    np.testing.assert_allclose(ol, tl, rtol=1e-5)
    assert ol[-1] < ol[0]
    for a, b in zip(op, tp):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)
    osd, tsd = oopt.state_dict(), topt.state_dict()
    assert osd["param_groups"] == tsd["param_groups"]
    assert sorted(osd["state"][0]) == sorted(tsd["state"][0])
    assert osd["state"][0]["func_evals"] == tsd["state"][0]["func_evals"]
    assert len(osd["state"][0]["old_dirs"]) == len(tsd["state"][0]["old_dirs"])


def test_lbfgs_state_dict_round_trip():
    x = ng.tensor([-1.5, 2.0], dtype=ng.float64, requires_grad=True)

    def make(p):
        opt = ng.optim.LBFGS([p], max_iter=4, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2
            loss.backward()
            return loss
        return opt, closure
    opt, closure = make(x)
    for _ in range(2):
        opt.step(closure)
    y = x.detach().clone().requires_grad_(True)
    opt2, closure2 = make(y)
    opt2.load_state_dict(opt.state_dict())
    opt.step(closure)
    opt2.step(closure2)
    np.testing.assert_array_equal(_np(x), _np(y))


# ----------------------------------------------------------------------------------------
# what optimizer code touches: memory formats, is_sparse, is_complex; the generator's repr
# ----------------------------------------------------------------------------------------


def test_memory_formats_as_pytorchs():
    for m in (ng, torch):
        x = m.arange(120.0).reshape(2, 3, 4, 5)
        cl = x.contiguous(memory_format=m.channels_last)
        got = (x.clone(memory_format=m.channels_last).stride(),
               m.zeros_like(x, memory_format=m.channels_last).stride(),
               m.empty_like(x, memory_format=m.channels_last).stride(), cl.stride(),
               cl.is_contiguous(), cl.is_contiguous(memory_format=m.channels_last),
               cl.clone().stride(), cl.contiguous().stride(), m.equal(cl, x),
               x.clone(memory_format=m.contiguous_format).stride(),
               m.zeros_like(x, memory_format=m.preserve_format).stride(),
               repr(m.channels_last), repr(m.preserve_format), repr(m.contiguous_format),
               x.is_sparse, x.is_complex(), m.is_complex(x))
        if m is ng:
            ours = got
    assert ours == got
    w = ng.ones(2, 3, requires_grad=True)
    out = (w * 2).reshape(1, 2, 3, 1).clone(memory_format=ng.channels_last)
    out.sum().backward()
    assert out.grad_fn.name() == "CloneBackward0" and w.grad.tolist() == [[2.0] * 3] * 2


MEMORY_ERRORS = [
    lambda m: m.zeros(2, 3).clone(memory_format=m.channels_last),
    lambda m: m.zeros(2, 3).contiguous(memory_format=None),
    lambda m: m.zeros_like(m.zeros(2), memory_format=1),
    lambda m: m.empty_like(m.zeros(2), memory_format=m.channels_last_3d),
    lambda m: m.zeros(2).clone(memory_format="channels_last"),
    lambda m: m.is_complex(3),
]


@pytest.mark.parametrize("case", range(len(MEMORY_ERRORS)))
def test_memory_format_errors_are_pytorchs(case):
    ours, theirs = raised(MEMORY_ERRORS[case], ng), raised(MEMORY_ERRORS[case], torch)
    assert ours == theirs and ours is not None


def test_generator_repr_as_pytorchs():
    import re
    pattern = r"<torch\._C\.Generator object at 0x[0-9a-f]+>"
    assert re.fullmatch(pattern, repr(torch.manual_seed(1)))
    assert re.fullmatch(pattern, repr(ng.manual_seed(1)))
    g = ng.Generator()
    assert repr(g) == f"<torch._C.Generator object at {hex(id(g))}>"
