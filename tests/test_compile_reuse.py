"""Intermediates of a compiled plan that are never alive at once share memory
(``numgrad/_compile/reuse.py``): the plan's results stay eager's, bit for bit, and a plan whose
sharing were wrong fails verification (so the call runs eagerly) instead of replaying."""

import warnings

import numpy as np

import numgrad
from numgrad._compile import reuse


def _mlp_step(seed=0):
    numgrad.manual_seed(seed)
    nn = numgrad.nn
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                          nn.Linear(16, 3))
    opt = numgrad.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return model, step


def _batches(n):
    rng = np.random.default_rng(3)
    return [(numgrad.tensor(rng.standard_normal((8, 6)).astype(np.float32)),
             numgrad.tensor(rng.integers(0, 3, 8))) for _ in range(n)]


def _same_as_eager(compiled_step, compiled_model):
    eager_model, eager_step = _mlp_step()
    for x, y in _batches(6):
        a, b = eager_step(x, y), compiled_step(x, y)
        assert a.numpy().tobytes() == b.numpy().tobytes()
    for (name, p), q in zip(eager_model.named_parameters(), compiled_model.parameters()):
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes(), name


def test_intermediates_share_memory_and_results_stay_eagers():
    model, step = _mlp_step()
    compiled = numgrad.compile(step)
    _same_as_eager(compiled, model)
    entries = [e for e in compiled._cache.values() if e.verified]
    assert entries
    plan = entries[-1].plan
    assert plan.arena
    shared = sum(-(-plan.statics[rid].nbytes // reuse.ALIGN) * reuse.ALIGN
                 for rid in plan.arena)
    assert plan.arena_bytes < shared
    # every static placed in the arena is a view of it, at its offset
    for rid, off in plan.arena.items():
        r = plan.statics[rid]
        assert r.__array_interface__["data"][0] == plan.arena_buffer.ctypes.data + off


def test_placement_is_first_fit_below_the_buffers_alive():
    """``_place`` puts each buffer, in order of birth (larger first), at the lowest offset
    clear of every buffer alive at its birth: checked against that rule written plainly, on
    random lives."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n, items = int(rng.integers(1, 120)), int(rng.integers(1, 40))
        first = {k: int(rng.integers(items)) for k in range(n)}
        last = {k: first[k] + int(rng.choice([0, 1, 2, 7, int(rng.integers(items))]))
                for k in range(n)}
        sizes = {k: reuse.ALIGN * int(rng.choice([1, 2, 3, int(rng.integers(1, 90))]))
                 for k in range(n)}
        want, placed = {}, []
        for key in sorted(first, key=lambda k: (first[k], -sizes[k])):
            at = 0
            for o, e in sorted((o, e) for o, e, d in placed if d >= first[key]):
                if at + sizes[key] <= o:
                    break
                at = max(at, e)
            want[key] = at
            placed.append((at, at + sizes[key], last[key]))
        assert reuse._place(sizes, first, last) == want


def test_wrong_sharing_fails_verification_and_calls_stay_eager(monkeypatch):
    """Every intermediate placed at offset 0 (lives overlapping): verification replays on a
    copy of the arena, each intermediate starting as NaN bytes where it is first written, so
    the plan never replays, and every call returns eager's values."""
    monkeypatch.setattr(reuse, "_place", lambda sizes, first, last: dict.fromkeys(sizes, 0))
    model, step = _mlp_step()
    compiled = numgrad.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_as_eager(compiled, model)
    assert compiled._cache and not any(e.verified for e in compiled._cache.values())


def _split_step(seed=0):
    """A step whose backward copies each slice's gradient into zeros of the whole (the
    gradient of ``x[:, a:b]``): constants of the trace that a kernel writes."""
    numgrad.manual_seed(seed)
    nn = numgrad.nn
    model = nn.Sequential(nn.Linear(6, 24), nn.Tanh())
    opt = numgrad.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad(set_to_none=True)
        h = model(x)
        q, k, v = h[:, :8], h[:, 8:16], h[:, 16:]
        loss = (q * k + v.tanh()).sum()
        loss.backward()
        opt.step()
        return loss.detach()
    return model, step


def test_written_constants_share_memory_and_get_their_content_back_when_first_touched():
    model, step = _split_step()
    compiled = numgrad.compile(step)
    eager_model, eager_step = _split_step()
    rng = np.random.default_rng(5)
    for _ in range(6):
        x = numgrad.tensor(rng.standard_normal((5, 6)).astype(np.float32))
        a, b = eager_step(x), compiled(x)
        assert a.numpy().tobytes() == b.numpy().tobytes()
    for p, q in zip(eager_model.parameters(), model.parameters()):
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes()
    plan = [e for e in compiled._cache.values() if e.verified][-1].plan
    assert plan.late_keys and all(key[1] in plan.arena for key in plan.late_keys)


def _forward_form_same_as_eager(compiled_model, model):
    """Steps with ``compiled_model`` (the forward form: backward and optimizer outside) equal
    eager steps of a twin model: losses, gradients and parameters, bit for bit."""
    eager_model, _ = _mlp_step()
    opts = [numgrad.optim.SGD(m.parameters(), lr=0.1) for m in (eager_model, model)]
    for x, y in _batches(6):
        losses = []
        for m, opt in zip((eager_model, compiled_model), opts):
            opt.zero_grad(set_to_none=True)
            loss = numgrad.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach().numpy().tobytes())
        assert losses[0] == losses[1]
    for p, q in zip(eager_model.parameters(), model.parameters()):
        assert p.grad.numpy().tobytes() == q.grad.numpy().tobytes()
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes()


def test_forward_form_plans_share_memory_and_a_wrong_sharing_fails_verification(monkeypatch):
    """The forward form's backward plan places its intermediates in an arena too (its
    verification, on shadow copies, starts each as NaN bytes where it is first touched); with
    every intermediate at offset 0 no plan verifies and every call stays eager's."""
    model, _ = _mlp_step()
    compiled = numgrad.compile(model)
    _forward_form_same_as_eager(compiled, model)
    plans = [e.plan for e in compiled._compiled._cache.values() if e.verified]
    assert plans and plans[-1].bwd.arena
    monkeypatch.setattr(reuse, "_place", lambda sizes, first, last: dict.fromkeys(sizes, 0))
    model, _ = _mlp_step()
    compiled = numgrad.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _forward_form_same_as_eager(compiled, model)
    cache = compiled._compiled._cache
    assert cache and not any(e.verified for e in cache.values())

