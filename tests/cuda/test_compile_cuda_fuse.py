"""numgrad.compile on CUDA tensors fuses runs of flat elementwise launches into one generated
numba.cuda kernel (``numgrad/_compile/cuda_fuse.py``): fewer launches per replay, the same
bits as eager, and every intermediate someone reads still written."""

import numpy as np

import numgrad
from numgrad._compile import cuda_plan
from tests.test_compile import _whole_step


def _bits(t):
    a = t.detach().cpu().numpy()
    return a.dtype, a.shape, a.tobytes()


def _cuda(a, **kw):
    return numgrad.tensor(a, device="cuda", **kw)


def _name(kernel):
    """A launched kernel's Python name: a GPU dispatcher keeps its function as ``py_func``,
    the simulator's kernel as ``fn``."""
    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    return getattr(fn, "__name__", None)


def _plans(compiled):
    return [e.plan for e in compiled._cache.values() if e.plan is not None]


def _chain(x):
    return ((x * 2 + 1).tanh() * x.sigmoid() - x.exp() * 0.1).sum()


def _run_chain(fuse, monkeypatch, calls=5):
    """The whole step (forward and backward of ``_chain``) compiled with or without fusion;
    returns the per-call (loss, gradient) bits, the eager ones and the verified plan."""
    if not fuse:
        monkeypatch.setattr(cuda_plan, "fuse_launches", lambda steps, *_: steps)
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(40).astype(np.float32) for _ in range(calls)]
    x = _cuda(data[0], requires_grad=True)

    def step(a):
        x.grad = None
        loss = _chain(x * a)
        loss.backward()
        return loss

    compiled = numgrad.compile(step)
    got, want = [], []
    for d in data:
        a = _cuda(d)
        loss = compiled(a)
        got.append((_bits(loss), _bits(x.grad)))
        loss = step(a)
        want.append((_bits(loss), _bits(x.grad)))
    entry = list(compiled._cache.values())[-1]  # x.grad is set: the replayed signature
    assert entry.verified and not entry.eager
    return got, want, entry.plan


def test_chain_step_fuses_and_matches_eager(monkeypatch):
    got, want, plan = _run_chain(True, monkeypatch)
    assert got == want  # loss and gradient of every call, bit for bit
    assert plan.launches < plan.unfused_launches and plan.fused
    print(f"chain step launches: {plan.unfused_launches} -> {plan.launches}")


def test_chain_step_unfused_counts_every_launch(monkeypatch):
    _, _, fused = _run_chain(True, monkeypatch, calls=4)
    got, want, plan = _run_chain(False, monkeypatch, calls=4)
    assert got == want
    assert plan.launches == plan.unfused_launches == fused.unfused_launches
    assert plan.fused is None


def test_intermediate_read_later_is_written():
    """``h`` is made by a fused run and read after a reduction, and ``g`` is returned: both
    must still be stored; ``u`` is read by nobody else and stays in registers."""
    def fn(a, b):
        u = a * 3 - b
        g = (u.exp() + 1).sqrt()
        h = g * b + 0.5
        s = h.sum()
        return g, h * s

    compiled = numgrad.compile(fn)
    rng = np.random.default_rng(1)
    for _ in range(4):
        a = _cuda(rng.standard_normal(33).astype(np.float32))
        b = _cuda(rng.standard_normal(33).astype(np.float32))
        got = compiled(a, b)
        want = fn(a, b)
        assert [_bits(t) for t in got] == [_bits(t) for t in want]
    plan, = _plans(compiled)
    assert plan.launches < plan.unfused_launches
    fused = [s[1] for s in plan.steps if s[0] is cuda_plan.LAUNCH
             and _name(s[1]) == "kernel"]
    assert fused


def test_float64_chain_and_in_place_update():
    """float64 chains fuse too, and an in-place update of an argument reads and writes the
    same view."""
    def fn(a, b):
        a.mul_(b).add_(1.0)
        return (a * a - b).abs()

    compiled = numgrad.compile(fn)
    rng = np.random.default_rng(2)
    base = rng.standard_normal(20)
    a, a_ref = _cuda(base.copy()), _cuda(base.copy())
    for _ in range(4):
        b = _cuda(rng.standard_normal(20) * 0.5)
        got = compiled(a, b)
        want = fn(a_ref, b)
        assert _bits(got) == _bits(want) and _bits(a) == _bits(a_ref)
    plan, = _plans(compiled)
    assert plan.launches < plan.unfused_launches


def test_mlp_training_step_launches():
    """A small MLP step (its elementwise launches broadcast or sit between matmuls, so little
    fuses): the launch count, and the compiled losses equal an eager twin's bit for bit."""
    nn = numgrad.nn

    def model_and_opt():
        numgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to("cuda")
        return model, numgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    compiled = numgrad.compile(_whole_step(*model_and_opt()))
    eager = _whole_step(*model_and_opt())
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = _cuda(rng.standard_normal((6, 8)).astype(np.float32))
        y = _cuda(rng.integers(0, 4, 6))
        assert _bits(compiled(x, y)) == _bits(eager(x, y))
    plan = _plans(compiled)[-1]
    print(f"MLP step launches: {plan.unfused_launches} -> {plan.launches}")
    assert plan.launches <= plan.unfused_launches


def test_a_fused_plan_that_fails_verification_is_retried_unfused(monkeypatch):
    # a broken fusion (one fused launch dropped) must not pass verification, and the next
    # trace builds the plan without fusion, which verifies and replays eager's bits
    real = cuda_plan.fuse_launches
    built = []

    def broken(steps, *args):
        fused = real(steps, *args)
        built.append(len(fused))
        launches = [k for k, s in enumerate(fused) if s[0] is cuda_plan.LAUNCH]
        return [s for k, s in enumerate(fused) if k != launches[0]]

    monkeypatch.setattr(cuda_plan, "fuse_launches", broken)
    got, want, plan = _run_chain(True, monkeypatch, calls=7)
    assert built, "the fusing plan was never built"
    assert got == want
    assert plan.fused is None and plan.launches == plan.unfused_launches
