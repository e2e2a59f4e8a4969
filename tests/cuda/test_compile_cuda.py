"""numgrad.compile on CUDA tensors: the trace records the numba.cuda launches, device
allocations and host reads, and from the third call the launches are replayed with no
Tensor, Node or engine work, giving eager's values, gradients and state bit for bit."""

import numpy as np
import pytest

import numgrad
from numgrad._compile.api import CompileError

F = numgrad.nn.functional


def _bits(t):
    """A tensor's (or None's) dtype, shape and bytes on the host."""
    if t is None:
        return None
    a = t.detach().cpu().numpy()
    return a.dtype, a.shape, a.tobytes()


def _counted(fn):
    """``fn`` and the list of its eager calls (a replayed call does not run it). ``fn`` must
    be a plain function of its arguments: the wrapper hides its closure from compile."""
    calls = []

    def counted(*args):
        calls.append(1)
        return fn(*args)
    return counted, calls


def _entries(compiled):
    return list(compiled._cache.values())


def _cuda(a):
    return numgrad.tensor(a, device="cuda")


# ---------------------------------------------------------------------------------------------
# the whole training step
# ---------------------------------------------------------------------------------------------


def _train(compiled, batches):
    """Train the tiny model from the same seed; returns the per-step losses, parameters and
    gradients (as bits), the loss tensors and the eager call count."""
    numgrad.manual_seed(0)
    nn = numgrad.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to("cuda")
    opt = numgrad.optim.SGD(model.parameters(), lr=0.1)

    calls = []  # eager runs of the step (a replayed call does not run it)

    def step(x, y):
        calls.append(1)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = numgrad.compile(step) if compiled else step
    record, kept = [], []
    for x, y in batches:
        loss = run(x, y)
        params = list(model.parameters())
        kept.append([loss] + [p.grad for p in params])
        record.append((_bits(loss), [_bits(p) for p in params],
                       [_bits(p.grad) for p in params]))
    return record, kept, len(calls), run


def _batches(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(_cuda(rng.standard_normal((4, 3)).astype(np.float32)),
             _cuda(rng.integers(0, 2, 4))) for _ in range(n)]


def test_training_step_replays_bit_for_bit():
    batches = _batches(5)
    want, want_kept, _, _ = _train(False, batches)
    got, kept, eager_calls, compiled = _train(True, batches)
    # the first call (no .grad yet) and the second are traced, the third verifies the
    # second's plan: the last two are replays
    assert eager_calls == 3
    first, entry = _entries(compiled)
    assert entry.verified and not entry.eager
    assert got == want  # losses, parameters and gradients after every step
    # every replay made a loss and gradients of its own (not overwritten by later calls)
    assert [[_bits(v) for v in k] for k in kept] == [[_bits(v) for v in k] for k in want_kept]
    assert not kept[-1][0].requires_grad and kept[-1][0].is_cuda


def test_replayed_target_check_raises_the_eager_error():
    """cross_entropy reads its out-of-range target count on the host: a replay checks that
    read, and a call whose value differs runs eagerly (and raises eager's error)."""
    w = numgrad.ones(4, 3, device="cuda", requires_grad=True)
    x = numgrad.ones(2, 4, device="cuda")

    def step(y):
        w.grad = None
        loss = F.cross_entropy(x @ w, y)
        loss.backward()
        return loss

    compiled = numgrad.compile(step)
    for _ in range(3):  # w.grad is None at the first call only: two signatures
        compiled(_cuda([0, 2]))
    assert _entries(compiled)[1].verified
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        compiled(_cuda([0, 3]))
    assert w.grad is None  # as eagerly: the step set it to None, then raised
    got = _bits(compiled(_cuda([1, 2])))
    assert got == _bits(step(_cuda([1, 2])))


# ---------------------------------------------------------------------------------------------
# plain programs
# ---------------------------------------------------------------------------------------------


def _elementwise(a, b):
    return (a * b + a.exp()).relu() - b / 2, a.sum()


def test_elementwise_program_replays():
    rng = np.random.default_rng(1)
    run, calls = _counted(_elementwise)
    compiled = numgrad.compile(run)
    outs, wants = [], []
    for _ in range(4):
        a = _cuda(rng.standard_normal(6).astype(np.float32))
        b = _cuda(rng.standard_normal(6).astype(np.float32))
        outs.append(compiled(a, b))
        wants.append(_elementwise(a, b))
    assert len(calls) == 2 and _entries(compiled)[0].verified
    for out, want in zip(outs, wants):  # each call's results are its own
        assert [_bits(o) for o in out] == [_bits(w) for w in want]


def test_in_place_updates_of_arguments_replay():
    def f(p, g):
        p.mul_(0.5).add_(g)
        return p.sum()

    compiled = numgrad.compile(f)
    p, q = _cuda([1.0, 2.0, 3.0]), _cuda([1.0, 2.0, 3.0])
    for k in range(4):
        g = _cuda([float(k), 1.0, -1.0])
        assert _bits(compiled(p, g)) == _bits(f(q, g))
        assert _bits(p) == _bits(q)
    assert _entries(compiled)[0].verified and p._version == q._version


def test_new_shape_retraces():
    def f(a):
        return (a * 2).sum(0)

    compiled = numgrad.compile(f)
    for n in (3, 4, 3, 4, 3, 4):
        a = _cuda(np.arange(n * 2, dtype=np.float32).reshape(n, 2))
        assert _bits(compiled(a)) == _bits(f(a))
    assert len(compiled._cache) == 2 and all(e.verified for e in _entries(compiled))


def test_graph_break_runs_eagerly():
    def f(a):
        if a.sum() > 0:  # data-dependent control flow
            return a * 2
        return a * 3

    compiled = numgrad.compile(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        compiled(numgrad.ones(3, device="cuda"))
    for v in (1.0, -1.0, 2.0):
        a = numgrad.full((3,), v, device="cuda")
        assert _bits(compiled(a)) == _bits(f(a))
    assert _entries(compiled)[0].eager
    with pytest.raises(CompileError, match="bool"):
        numgrad.compile(f, fullgraph=True)(numgrad.ones(3, device="cuda"))


def _to_gpu(a, b):
    return a * b.t().to("cuda")  # a strided view of a CPU argument copied to the GPU


def test_cpu_tensors_copied_to_the_gpu_replay():
    run, calls = _counted(_to_gpu)
    compiled = numgrad.compile(run)
    a = _cuda(np.arange(6, dtype=np.float32).reshape(2, 3))
    for v in (1.0, 2.0, 3.0, 4.0):
        b = numgrad.tensor(np.arange(6, dtype=np.float32).reshape(3, 2) * v)
        assert _bits(compiled(a, b)) == _bits(_to_gpu(a, b))
    assert len(calls) == 2 and _entries(compiled)[0].verified


def test_cpu_kernels_beside_cuda_ones_run_eagerly():
    def f(a, b):
        return a * (b * 2).to("cuda")

    compiled = numgrad.compile(f)
    a = _cuda([1.0, 2.0])
    with pytest.warns(UserWarning, match="CPU kernels"):
        compiled(a, numgrad.tensor([1.0, 1.0]))
    for v in (1.0, 2.0, 3.0):
        b = numgrad.tensor([v, -v])
        assert _bits(compiled(a, b)) == _bits(f(a, b))
    assert _entries(compiled)[0].eager


def test_a_broken_plan_fails_verification():
    """The verifier replays the plan beside the second eager call: a plan missing a launch
    is caught there, never replayed, and the calls keep eager's results."""
    compiled = numgrad.compile(_elementwise)
    a, b = _cuda([1.0, -2.0, 3.0]), _cuda([0.5, 0.5, -1.0])
    compiled(a, b)
    entry, = _entries(compiled)
    plan = entry.plan
    launches = [k for k, s in enumerate(plan.steps) if s[0] == "launch"]
    del plan.steps[launches[-2]]
    got = compiled(a, b)
    assert not entry.verified
    assert [_bits(o) for o in got] == [_bits(o) for o in _elementwise(a, b)]


def test_recording_is_undone_after_every_trace():
    """The launch, allocation and copy functions are wrapped only while a trace runs, also
    when the traced function raises."""
    from numgrad.kernels.cuda import _launch
    from numgrad.kernels.cuda.array import CudaArray

    def hooks():
        return (_launch.launch, _launch.launch_blocks, _launch.alloc,
                CudaArray.__dict__["from_host"], CudaArray.to_host, CudaArray.device_array,
                CudaArray.__dict__["__cuda_array_interface__"])

    before = hooks()

    def fails(a):
        a * 2
        raise ValueError("inside the trace")

    with pytest.raises(ValueError, match="inside the trace"):
        numgrad.compile(fails)(_cuda([1.0]))
    assert hooks() == before
    numgrad.compile(lambda a: a + 1)(_cuda([1.0]))
    assert hooks() == before
