"""numgrad.compile on CUDA tensors: the trace records the numba.cuda launches, device
allocations and host reads, and from the third call the launches are replayed with no
Tensor, Node or engine work, giving eager's values, gradients and state bit for bit."""

import itertools
import warnings

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


def _count(calls):
    """How many times ``next(calls)`` ran. The counters are ``itertools.count`` objects,
    which the compile guard does not look into: a list counting calls would be Python state
    the function changes, which compile guards, so no call would replay. Read from its repr
    (copying one is deprecated from Python 3.12)."""
    return int(repr(calls)[len("count("):-1])


def _counted(fn):
    """``fn`` and the counter of its eager calls (a replayed call does not run it). ``fn``
    must be a plain function of its arguments: the wrapper hides its closure from compile."""
    calls = itertools.count()

    def counted(*args):
        next(calls)
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

    calls = itertools.count()  # eager runs of the step (a replayed call does not run it)

    def step(x, y):
        next(calls)
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
    return record, kept, _count(calls), run


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


@pytest.mark.parametrize("op", ["index_add", "index_copy"])
def test_replayed_index_write_checks_the_index_again(op):
    """index_add/index_copy check their index on the host before the GPU writes: a compiled
    call with an out-of-range index raises eager's error (the check is a host step a replay
    repeats; today the trace also runs CPU kernels beside CUDA ones, so it runs eagerly)."""
    x = numgrad.zeros(4, 3, device="cuda")
    src = numgrad.ones(2, 3, device="cuda")

    def f(i):
        return getattr(x, op)(0, i, src) * 2

    compiled = numgrad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            assert _bits(compiled(_cuda([0, 1]))) == _bits(f(_cuda([0, 1])))
    error = RuntimeError if op == "index_add" else IndexError  # (PyTorch's classes)
    with pytest.raises(error) as eager:
        f(_cuda([0, 9]))
    with pytest.raises(error) as replayed:
        compiled(_cuda([0, 9]))
    assert str(replayed.value) == str(eager.value)
    assert _bits(compiled(_cuda([3, 2]))) == _bits(f(_cuda([3, 2])))


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
    assert _count(calls) == 2 and _entries(compiled)[0].verified
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
    assert _count(calls) == 2 and _entries(compiled)[0].verified


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


# ---------------------------------------------------------------------------------------------
# the forward form: ``loss = f(x)``, its backward one compiled node
# ---------------------------------------------------------------------------------------------


def _forward_replayed(compiled):
    """Whether ``compiled`` has a verified plan of the CUDA forward form."""
    from numgrad._compile.forward import CudaForwardPlan
    compiled = getattr(compiled, "_compiled", compiled)
    return any(e.verified and isinstance(e.plan, CudaForwardPlan)
               for e in compiled._cache.values())


def _mlp_loss(seed=0):
    """A tiny CUDA MLP, its SGD optimizer, a loss function of it that counts its eager runs,
    and that count."""
    numgrad.manual_seed(seed)
    nn = numgrad.nn
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 4), nn.ReLU(),
                          nn.Linear(4, 2)).to("cuda")
    opt = numgrad.optim.SGD(model.parameters(), lr=0.1)
    calls = itertools.count()

    def loss_fn(x, y):
        next(calls)
        return F.cross_entropy(model(x), y) + 0.5 * F.mse_loss(model(x).sigmoid(), x[:, :2])

    return model, opt, loss_fn, calls


def _forward_train(compiled, batches):
    """Forward-form training: the loss is computed (compiled or not), its backward and the
    optimizer step run outside. Per step: the loss, its grad_fn name, parameters and
    gradients (as bits); the loss function; its eager-run count."""
    model, opt, loss_fn, calls = _mlp_loss()
    run = numgrad.compile(loss_fn) if compiled else loss_fn
    record = []
    for x, y in batches:
        opt.zero_grad()
        loss = run(x, y)
        name = loss.grad_fn.name()
        loss.backward()
        params = list(model.parameters())
        record.append((_bits(loss), name, [_bits(p.grad) for p in params]))
        opt.step()
        record.append([_bits(p) for p in params])
    return record, run, _count(calls)


def test_forward_form_mlp_loss_replays_bit_for_bit():
    batches = _batches(6, seed=3)
    want, _, _ = _forward_train(False, batches)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="numgrad.compile")  # no eager fallback (a
        # GPU adds warnings of its own: low occupancy at these sizes)
        got, compiled, eager_runs = _forward_train(True, batches)
    # the first call is traced, the second verifies the plan beside eager: then 4 replays
    assert eager_runs == 2
    assert _forward_replayed(compiled)
    for k in range(0, len(got), 2):  # loss, gradients, then parameters after the step
        (gl, gname, ggrads), (wl, _, wgrads) = got[k], want[k]
        assert gname == "CompiledFunctionBackward" if k >= 4 else gname != \
            "CompiledFunctionBackward"
        assert gl == wl and ggrads == wgrads
        assert got[k + 1] == want[k + 1]


def test_forward_form_of_a_module():
    numgrad.manual_seed(1)
    nn = numgrad.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to("cuda")
    cmodel = numgrad.compile(model)
    rng = np.random.default_rng(2)
    names = []
    for _ in range(4):
        x = _cuda(rng.standard_normal((5, 3)).astype(np.float32))
        g = _cuda(rng.standard_normal((5, 2)).astype(np.float32))
        got = []
        for m in (cmodel, model):
            model.zero_grad()
            out = m(x)
            names.append(out.grad_fn.name())
            out.backward(g)
            got.append([_bits(out)] + [_bits(p.grad) for p in model.parameters()])
        assert got[0] == got[1]
    assert _forward_replayed(cmodel)
    assert names[4:] == ["CompiledFunctionBackward", "AddmmBackward0"] * 2


def test_forward_form_retraces_on_a_new_shape():
    w = _cuda(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)).requires_grad_()
    calls = itertools.count()

    def f(x):
        next(calls)
        return (x @ w).tanh().sum()

    compiled = numgrad.compile(f)
    for n in (4, 6, 4, 6, 4, 6, 4):
        x = _cuda(np.arange(n * 3, dtype=np.float32).reshape(n, 3) / 7)
        w.grad = None
        loss = compiled(x)
        loss.backward()
        got = (_bits(loss), _bits(w.grad))
        w.grad = None
        loss = (x @ w).tanh().sum()
        loss.backward()
        assert got == (_bits(loss), _bits(w.grad))
    assert len(compiled._cache) == 2 and _forward_replayed(compiled)
    assert all(e.verified for e in _entries(compiled))
    assert _count(calls) == 4  # each signature traced and verified, then 3 replays


def _tanh_loss(x, w, b):
    return ((x @ w + b).tanh() * x[:, :1]).sum()


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_forward_form_two_calls_backpropagated_in_either_order(order):
    """Each call saves its own buffers: the second call does not overwrite the first's."""
    rng = np.random.default_rng(4)
    w = _cuda(rng.standard_normal((3, 2)).astype(np.float32)).requires_grad_()
    b = _cuda(rng.standard_normal(2).astype(np.float32)).requires_grad_()
    xs = [_cuda(rng.standard_normal((4, 3)).astype(np.float32)) for _ in range(2)]
    compiled = numgrad.compile(lambda x: _tanh_loss(x, w, b))
    for _ in range(3):
        compiled(xs[0])
    assert _forward_replayed(compiled)
    got = []
    for f in (compiled, lambda x: _tanh_loss(x, w, b)):
        w.grad = b.grad = None
        losses = [f(xs[0]), f(xs[1]) * 2]
        for k in order:
            losses[k].backward()
        got.append([_bits(v) for v in (*losses, w.grad, b.grad)])
    assert got[0] == got[1]


def test_forward_form_in_place_change_of_a_saved_tensor_raises():
    def errors(make):
        w = _cuda([0.5, -1.0, 2.0]).requires_grad_()
        f = make(lambda x: (x * w).tanh().sum())
        for _ in range(3):  # d/dx reads w
            loss = f(_cuda([1.0, 2.0, 3.0]).requires_grad_())
        with numgrad.no_grad():
            w.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as exc:
            loss.backward()
        return str(exc.value), f

    got, compiled = errors(numgrad.compile)
    want, _ = errors(lambda fn: fn)
    assert got == want
    assert _forward_replayed(compiled)


def _scaled_tanh(device):
    w = numgrad.tensor([0.5, -1.0, 2.0], device=device, requires_grad=True)
    return lambda x: (x * w).tanh()  # tanh's backward reads its output


def test_forward_form_in_place_change_of_a_saved_output_raises():
    """As on the CPU: the message names the output's node at the check (``Mul`` after
    ``mul_``; eager names the node that saved it, ``Tanh``)."""
    messages = []
    for device in ("cuda", "cpu"):
        compiled = numgrad.compile(_scaled_tanh(device))
        for _ in range(4):
            out = compiled(numgrad.tensor([1.0, 2.0, 3.0], device=device))
        assert out.grad_fn.name() == "CompiledFunctionBackward"
        out.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as exc:
            out.sum().backward()
        messages.append(str(exc.value))
    assert messages[0] == messages[1]
    assert "which is output 0 of Mul, is at version 1; expected version 0" in messages[0]


def test_forward_form_backward_twice_needs_retain_graph():
    w = _cuda([0.5, -1.0]).requires_grad_()
    f = numgrad.compile(lambda a: (a * w).exp().sum())
    for _ in range(3):
        loss = f(_cuda([1.0, 2.0]))
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    loss.backward(retain_graph=True)
    once = w.grad.cpu().numpy().copy()
    loss.backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), 2 * once)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        loss.backward()


def test_forward_form_gradient_passed_through_is_not_the_callers_buffer():
    """d(a + w)/dw is the output gradient itself: ``.grad`` must not share its memory, and a
    strided output gradient is laid out as the trace's."""
    w = _cuda([1.0, 2.0]).requires_grad_()
    f = numgrad.compile(lambda a: a + w)
    for _ in range(3):
        w.grad = None
        out = f(_cuda([1.0, 1.0]))
        g = _cuda([3.0, 4.0])
        out.backward(g)
    assert _forward_replayed(f)
    out = f(_cuda([1.0, 1.0]))
    out.backward(g)  # accumulates into w.grad in place
    np.testing.assert_array_equal(g.cpu().numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [6.0, 8.0])



def test_forward_form_strided_output_gradient():
    """An output gradient the engine hands over as a strided view (``t()``'s backward) is
    laid out as the trace's before the launches read it."""
    w = _cuda([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).requires_grad_()
    f = numgrad.compile(lambda a: a * w)
    c = _cuda([[1.0, 10.0], [100.0, 1000.0], [-1.0, -10.0]])
    for run in (f, f, f, lambda a: a * w):
        w.grad = None
        out = run(_cuda([[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]))
        (out.t() * c).sum().backward()  # out's gradient: c.t(), strides (1, 2)
        np.testing.assert_array_equal(w.grad.cpu().numpy(), [[2.0, 200.0, -2.0],
                                                              [30.0, 3000.0, -30.0]])
    assert _forward_replayed(f)


def test_forward_form_a_broken_backward_plan_fails_verification():
    """A backward plan missing a launch is caught by the verification: never replayed."""
    w = _cuda([0.5, -1.0, 2.0]).requires_grad_()

    def f(x):
        return (x * w).tanh().sum()

    compiled = numgrad.compile(f)
    x = _cuda([1.0, 2.0, 3.0])
    compiled(x)
    entry, = _entries(compiled)
    plan = entry.plan.bwd
    launches = [k for k, s in enumerate(plan.steps) if s[0] == "launch"]
    del plan.steps[launches[0]]
    for k in range(4):
        w.grad = None
        compiled(x).backward()
        got = _bits(w.grad)
        w.grad = None
        f(x).backward()
        assert got == _bits(w.grad)
        if k == 0:  # the broken plan failed beside this call: a new trace replaces it
            assert not entry.verified and entry.failures == 1 and entry.plan.bwd is not plan
    assert entry.verified and entry.failures == 1


def test_forward_form_several_outputs_some_without_gradient():
    """Two differentiable outputs, one unused by the backward (its gradient is zeros), and an
    integer one."""
    rng = np.random.default_rng(5)
    w = _cuda(rng.standard_normal((4, 3)).astype(np.float32)).requires_grad_()

    def fn(x):
        h = x @ w
        return {"h": h.sigmoid(), "s": (h * h).sum(1), "n": h.argmax(1)}

    compiled = numgrad.compile(fn)
    for k in range(4):
        x = _cuda(rng.standard_normal((5, 4)).astype(np.float32)).requires_grad_()
        got = []
        for f in (compiled, fn):
            w.grad = x.grad = None
            out = f(x)
            assert not out["n"].requires_grad
            loss = out["s"][1:].pow(2).sum() if k % 2 else (out["h"] * 3).mean() + out["s"].sum()
            loss.backward()
            got.append([_bits(v) for v in (out["h"], out["s"], out["n"], w.grad, x.grad)])
            if f is compiled and k >= 2:
                assert out["s"].grad_fn.name() == "CompiledFunctionBackward"
        assert got[0] == got[1]
    assert _forward_replayed(compiled)


def test_forward_form_target_check_raises_the_eager_error():
    """cross_entropy's host read of its out-of-range target count is a guard of the forward
    plan: a call whose value differs runs eagerly and raises eager's error."""
    w = numgrad.ones(4, 3, device="cuda", requires_grad=True)
    x = numgrad.ones(2, 4, device="cuda")
    compiled = numgrad.compile(lambda y: F.cross_entropy(x @ w, y))
    for _ in range(3):
        compiled(_cuda([0, 2]))
    assert _forward_replayed(compiled)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        compiled(_cuda([0, 3]))
    loss = compiled(_cuda([1, 2]))
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    loss.backward()
    got = _bits(w.grad)
    w.grad = None
    F.cross_entropy(x @ w, _cuda([1, 2])).backward()
    assert got == _bits(w.grad)


def test_forward_form_create_graph_gradients_cannot_be_differentiated_again():
    from numgrad._compile.forward import DOUBLE_BACKWARD
    w = _cuda([0.5, -1.0]).requires_grad_()
    f = numgrad.compile(lambda a: (a * w).tanh().sum())
    x = _cuda([1.0, 2.0])
    for _ in range(3):
        loss = f(x)
    (g,) = numgrad.autograd.grad(loss, w, create_graph=True)
    (want,) = numgrad.autograd.grad((x * w).tanh().sum(), w)
    assert _bits(g) == _bits(want)
    assert g.grad_fn.name() == "CompiledFunctionBackwardBackward"
    with pytest.raises(RuntimeError, match=DOUBLE_BACKWARD):
        g.sum().backward()


def test_a_copy_to_the_gpu_of_host_values_nothing_guards_is_not_replayed():
    """Host memory the guard does not see (a NumPy array held by a library object) copied to
    the GPU inside the function: its values are read at every call, never replayed."""
    import types
    holder = types.SimpleNamespace(a=np.ones(3, np.float32))

    def f(x):
        return x + numgrad.from_numpy(holder.a).cuda()

    compiled = numgrad.compile(f)
    x = _cuda([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(5):
            holder.a = np.full(3, float(max(k, 2)), np.float32)
            assert _bits(compiled(x)) == _bits(f(x))
