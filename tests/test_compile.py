"""numgrad.compile: a replayed trace gives eager's values, gradients and state, bit for bit."""

import warnings

import numpy as np
import pytest

import numgrad
from numgrad._compile.api import RECOMPILE_LIMIT, CompileError
from tests.conftest import torch
from tests.op_cases import CASES, IDS


def _entries(compiled):
    return list(compiled._cache.values())


def _replayed(compiled):
    return any(e.verified for e in _entries(compiled))


def _tensors(case, rng):
    _, _, _, makers = case
    return [np.asarray(mk(rng), np.float32) for mk in makers]


def _step(fn):
    """Forward, backward of the sum of every float output, the outputs and gradients."""
    def step(*ts):
        for t in ts:
            t.grad = None
        out = fn(numgrad, *ts)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        diff = [o for o in outs if o.requires_grad]
        if diff:
            total = diff[0].sum()
            for o in diff[1:]:
                total = total + o.sum()
            total.backward()
        return tuple(o.detach() for o in outs)
    return step


def _run(step, arrays):
    ts = [numgrad.tensor(a, requires_grad=True) for a in arrays]
    outs = step(*ts)
    return [o.numpy() for o in outs], [None if t.grad is None else t.grad.numpy() for t in ts]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_op_table_compiled_matches_eager(case):
    """Every op of the table, forward and backward, traced then replayed on new values."""
    rng = np.random.default_rng(0)
    step = _step(case[1])
    compiled = numgrad.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            arrays = _tensors(case, rng)
            try:
                want = _run(step, arrays)
            except Exception as exc:  # the op rejects these inputs eagerly: so must compile
                with pytest.raises(type(exc)):
                    _run(compiled, arrays)
                return
            got = _run(compiled, arrays)
            for w, g in zip(want[0] + want[1], got[0] + got[1]):
                if w is None:
                    assert g is None
                else:
                    np.testing.assert_array_equal(g, w)


def test_most_of_the_op_table_is_replayed():
    """Not a silent eager fallback: the table's rows are replayed from their third call,
    except rows that read values in Python or draw random numbers."""
    replayed, eager = [], []
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in CASES:
            compiled = numgrad.compile(_step(case[1]))
            try:
                for _ in range(3):
                    _run(compiled, _tensors(case, rng))
            except Exception:
                continue
            (replayed if _replayed(compiled) else eager).append(case[0])
    assert len(replayed) >= 0.8 * (len(replayed) + len(eager)), eager


def _seeds():
    x = numgrad.tensor(np.arange(25, dtype=np.float32).reshape(5, 5) / 25, requires_grad=True)
    y = numgrad.tensor(np.arange(25, dtype=np.float32).reshape(5, 5) / 10 + 1,
                       requires_grad=True)

    def step():
        z = (x ** 2 + y ** 3).sum()
        z.backward()
        return z
    return x, y, step


def test_whole_step_accumulates_grads_like_eager():
    x, y, step = _seeds()
    x2, y2, step2 = _seeds()
    compiled = numgrad.compile(step2)
    for _ in range(6):
        z, z2 = step(), compiled()
        np.testing.assert_array_equal(z2.detach().numpy(), z.detach().numpy())
        np.testing.assert_array_equal(x2.grad.numpy(), x.grad.numpy())
        np.testing.assert_array_equal(y2.grad.numpy(), y.grad.numpy())
    assert _replayed(compiled)
    assert not z2.requires_grad  # a whole step's result is returned detached


def test_replayed_results_and_grads_are_fresh_tensors():
    """What a call returns or leaves in .grad is not overwritten by the next call."""
    x = numgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def step(v):
        x.grad = None
        loss = (x * v).sum()
        loss.backward()
        return loss

    compiled = numgrad.compile(step)
    results, grads = [], []
    for k in range(5):
        v = numgrad.tensor([float(k)] * 3)
        results.append(compiled(v))
        grads.append(x.grad)
    assert _replayed(compiled)
    for k in range(5):
        assert results[k].item() == 6.0 * k
        np.testing.assert_array_equal(grads[k].numpy(), [k, k, k])


def test_new_shape_retraces():
    def f(a):
        return (a * 2).sum(0)

    compiled = numgrad.compile(f)
    for n in (3, 4, 3, 4, 3, 4):
        a = numgrad.tensor(np.arange(n * 2, dtype=np.float32).reshape(n, 2))
        np.testing.assert_array_equal(compiled(a).numpy(), f(a).numpy())
    assert len(compiled._cache) == 2 and all(e.verified for e in _entries(compiled))


def test_recompile_limit_warns_and_runs_eagerly():
    """Programs (signatures apart from tensor sizes) are limited as torch's recompiles."""
    compiled = numgrad.compile(lambda a, k: a + k)
    for k in range(1, RECOMPILE_LIMIT + 1):
        compiled(numgrad.ones(3), k)
    with pytest.warns(UserWarning, match="recompile limit"):
        out = compiled(numgrad.ones(3), RECOMPILE_LIMIT + 1)
    np.testing.assert_array_equal(out.numpy(), np.full(3, RECOMPILE_LIMIT + 2, np.float32))


def test_a_growing_size_traces_one_plan_per_size_past_the_recompile_limit():
    """A sequence growing by one per call (token-by-token generation) is one program: each
    length gets its own plan, replayed when the length comes again, beyond the 8 programs."""
    w = numgrad.ones(4)
    compiled = numgrad.compile(lambda a: (a * w).sum(1))
    for _ in range(3):
        for n in range(1, 2 * RECOMPILE_LIMIT):
            a = numgrad.tensor(np.arange(n * 4, dtype=np.float32).reshape(n, 4))
            np.testing.assert_array_equal(compiled(a).numpy(), (a * w).sum(1).numpy())
    assert len(compiled._programs) == 1
    assert all(e.verified for e in _entries(compiled))


def test_logsumexp_results_stacked_are_replayed():
    """A CRF's forward step (row 14's chain): vector and row logsumexps, stacked; the kernel
    writes its result in place, so nothing a later kernel reads comes from outside the tape."""
    def step(x, t):
        a = numgrad.stack([numgrad.logsumexp(x + t[j], 0) for j in range(3)])
        loss = numgrad.logsumexp(a, 0) + numgrad.logsumexp(t, 1).sum()
        loss.backward()
        return loss.detach()

    compiled = numgrad.compile(step, fullgraph=True)
    rng = np.random.default_rng(3)
    for _ in range(4):
        xs, ts = rng.standard_normal(3, np.float32), rng.standard_normal((3, 3), np.float32)
        got = [numgrad.tensor(xs, requires_grad=True), numgrad.tensor(ts, requires_grad=True)]
        want = [numgrad.tensor(xs, requires_grad=True), numgrad.tensor(ts, requires_grad=True)]
        np.testing.assert_array_equal(compiled(*got).numpy(), step(*want).numpy())
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.grad.numpy(), w.grad.numpy())
    assert _replayed(compiled)


def test_python_reading_values_runs_eagerly():
    def f(a):
        if a.sum() > 0:  # data-dependent control flow
            return a * 2
        return a * 3

    compiled = numgrad.compile(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        compiled(numgrad.ones(3))
    for v in (1.0, -1.0, 2.0, -2.0):
        a = numgrad.full((3,), v)
        np.testing.assert_array_equal(compiled(a).numpy(), f(a).numpy())
    with pytest.raises(CompileError, match="bool"):
        numgrad.compile(f, fullgraph=True)(numgrad.ones(3))


def test_random_numbers_run_eagerly():
    def f(a):
        return numgrad.nn.functional.dropout(a, 0.5) * 2

    compiled = numgrad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        numgrad.manual_seed(0)
        got = [compiled(numgrad.ones(64)).numpy() for _ in range(4)]
    numgrad.manual_seed(0)
    want = [f(numgrad.ones(64)).numpy() for _ in range(4)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_hooks_run_eagerly():
    x = numgrad.ones(3, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(1))

    def step():
        (x * 2).sum().backward()

    compiled = numgrad.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            compiled()
    assert len(seen) == 4


def test_forward_result_that_needs_backward_gives_eager_grads():
    """A result that still requires grad is backpropagated outside the compiled function (the
    forward form, tested in test_compile_forward.py)."""
    w = numgrad.ones(3, requires_grad=True)
    compiled = numgrad.compile(lambda a: (a * w).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            loss = compiled(numgrad.full((3,), 2.0))
            loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 6.0, 6.0])


def test_errors_are_eager_errors():
    compiled = numgrad.compile(lambda a, b: a @ b)
    for _ in range(3):
        compiled(numgrad.ones(2, 3), numgrad.ones(3, 4))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        compiled(numgrad.ones(2, 3), numgrad.ones(2, 4))


def test_no_grad_inference_module():
    numgrad.manual_seed(0)
    model = numgrad.nn.Sequential(numgrad.nn.Linear(4, 8), numgrad.nn.Tanh(),
                                  numgrad.nn.Linear(8, 2))
    compiled = numgrad.compile(model)
    rng = np.random.default_rng(0)
    with numgrad.no_grad():
        for _ in range(5):
            x = numgrad.tensor(rng.standard_normal((3, 4)).astype(np.float32))
            np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
    assert _replayed(compiled._compiled)
    assert compiled.training and compiled[0] is model[0]


def _whole_step(model, opt):
    """One training step: forward, cross-entropy, backward, update."""
    def step(x, y):
        opt.zero_grad()
        loss = numgrad.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _in_form(model, opt, form):
    """The training step and what was compiled: nothing ("eager"), the whole step ("step")
    or the model ("forward", the step calling it)."""
    compiled = numgrad.compile(model) if form == "forward" else None
    step = _whole_step(model if compiled is None else compiled, opt)
    if form == "step":
        compiled = step = numgrad.compile(step)
    return step, compiled


def _train(make_model, batches, steps, form, optimizer="sgd"):
    """Train from the same seed; ``form``: "eager", "step" (the whole step compiled) or
    "forward" (the model compiled). Returns the losses, parameters and compiled object."""
    numgrad.manual_seed(0)
    model = make_model()
    params = list(model.parameters())
    opt = (numgrad.optim.SGD(params, lr=0.05, momentum=0.9) if optimizer == "sgd"
           else numgrad.optim.Adam(params, lr=1e-3))
    run, compiled = _in_form(model, opt, form)
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(steps):
            x, y = batches[k % len(batches)]
            losses.append(run(x, y).item())
    return losses, [p.detach().numpy().copy() for p in params], compiled


def _batches(shape, n_classes, count=7, seed=0):
    rng = np.random.default_rng(seed)
    return [(numgrad.tensor(rng.standard_normal(shape).astype(np.float32)),
             numgrad.tensor(rng.integers(0, n_classes, shape[0]))) for _ in range(count)]


def _mlp():
    nn = numgrad.nn
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))


def _cnn():
    nn = numgrad.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 2 * 2, 3))


def _replayed_as(compiled, form):
    """Whether ``compiled`` replays (in the forward form when ``form`` says so)."""
    from numgrad._compile.forward import ForwardPlan
    compiled = getattr(compiled, "_compiled", compiled)
    return any(e.verified and isinstance(e.plan, ForwardPlan) == (form == "forward")
               for e in compiled._cache.values())


@pytest.mark.parametrize("form", ["step", "forward"])
@pytest.mark.parametrize("make_model,shape,n_classes", [(_mlp, (16, 20), 5),
                                                        (_cnn, (8, 1, 8, 8), 3)],
                         ids=["mlp", "cnn"])
def test_100_training_steps_equal_eager(make_model, shape, n_classes, form):
    batches = _batches(shape, n_classes)
    eager_losses, eager_params, _ = _train(make_model, batches, 100, "eager")
    losses, params, compiled = _train(make_model, batches, 100, form)
    assert _replayed_as(compiled, form)
    assert losses == eager_losses
    for p, q in zip(params, eager_params):
        np.testing.assert_array_equal(p, q)


def test_adam_steps_equal_eager():
    """Adam's step count is Python state: the step runs eagerly, with eager's numbers."""
    batches = _batches((16, 20), 5)
    eager_losses, eager_params, _ = _train(_mlp, batches, 10, "eager", "adam")
    losses, params, _ = _train(_mlp, batches, 10, "step", "adam")
    assert losses == eager_losses
    for p, q in zip(params, eager_params):
        np.testing.assert_array_equal(p, q)


def test_replayed_index_checks_raise_eager_errors():
    """Checks that kernels report (targets, gather indices) run in every replay."""
    F = numgrad.nn.functional
    w = numgrad.ones(4, 3, requires_grad=True)
    x = numgrad.ones(2, 4)

    def step(y, idx):
        w.grad = None
        loss = F.cross_entropy(x @ w, y) + (x @ w).gather(1, idx.view(-1, 1)).sum()
        loss.backward()
        return loss

    compiled = numgrad.compile(step)
    for _ in range(4):
        compiled(numgrad.tensor([0, 2]), numgrad.tensor([1, 2]))
    assert _replayed(compiled)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        compiled(numgrad.tensor([0, 3]), numgrad.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1"):
        compiled(numgrad.tensor([0, 1]), numgrad.tensor([1, 5]))
    assert w.grad is None  # as eagerly: the step set it to None, then raised
    compiled(numgrad.tensor([0, 2]), numgrad.tensor([1, 2]))
    got = w.grad.numpy()
    step(numgrad.tensor([0, 2]), numgrad.tensor([1, 2]))
    np.testing.assert_array_equal(got, w.grad.numpy())


def test_ignore_index_count_is_checked():
    """cross_entropy's mean divides by the count of kept targets: a replay whose count differs
    from the trace's runs eagerly."""
    F = numgrad.nn.functional
    w = numgrad.ones(4, 3, requires_grad=True)
    x = numgrad.tensor(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)

    def step(y):
        return F.cross_entropy(x @ w, y, ignore_index=0)

    compiled = numgrad.compile(step)
    with numgrad.no_grad():
        for _ in range(4):
            compiled(numgrad.tensor([1, 2]))
        assert _replayed(compiled)
        for y in ([1, 2], [0, 2], [2, 0], [1, 1]):
            t = numgrad.tensor(y)
            np.testing.assert_array_equal(compiled(t).numpy(), step(t).numpy())


def test_data_assignment_is_replayed():
    """``p.data = ...`` inside the function: the new data is the caller's after every call."""
    p = numgrad.tensor([1.0, 2.0])

    def step(v):
        p.data = p * v
        return p.sum()

    compiled = numgrad.compile(step)
    for k in range(1, 6):
        compiled(numgrad.tensor([float(k), 1.0]))
    assert _replayed(compiled)
    np.testing.assert_array_equal(p.numpy(), [120.0, 2.0])


def test_seeds_compiled_match_pytorch():
    torch = pytest.importorskip("torch")
    xs = np.random.default_rng(0).random((5, 5)).astype(np.float32)
    ys = np.random.default_rng(1).random((5, 5)).astype(np.float32) + 1
    x, y = (numgrad.tensor(a, requires_grad=True) for a in (xs, ys))
    tx, ty = (torch.tensor(a, requires_grad=True) for a in (xs, ys))

    @numgrad.compile
    def step():
        z = (x ** 2 + y ** 3).sum()
        z.backward()
        return z

    for _ in range(5):
        z = step()
        tz = (tx ** 2 + ty ** 3).sum()
        tz.backward()
        np.testing.assert_allclose(z.detach().numpy(), tz.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-6)
    assert _replayed(step)


@pytest.mark.parametrize("form", ["step", "forward"])
def test_compiled_training_matches_pytorch(form):
    """20 SGD steps of the compiled MLP step (or of the step calling the compiled MLP) against
    PyTorch from the same weights."""
    torch = pytest.importorskip("torch")
    batches = _batches((16, 20), 5)
    numgrad.manual_seed(0)
    model = _mlp()
    tmodel = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(),
                                 torch.nn.Linear(32, 5))
    with torch.no_grad():
        for tp, p in zip(tmodel.parameters(), model.parameters()):
            tp.copy_(torch.tensor(p.detach().numpy()))
    opt = numgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.05, momentum=0.9)

    step, compiled = _in_form(model, opt, form)
    for k in range(20):
        x, y = batches[k % len(batches)]
        loss = step(x, y)
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tmodel(torch.tensor(x.numpy())),
                                                  torch.tensor(y.numpy()))
        tloss.backward()
        topt.step()
        assert abs(loss.item() - tloss.item()) < 1e-5
    assert _replayed_as(compiled, form)
    for p, tp in zip(model.parameters(), tmodel.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), atol=1e-5)


def test_compiled_step_gradients_match_finite_differences():
    """float64: the gradients a replayed step leaves agree with central differences."""
    w = numgrad.tensor(np.random.default_rng(2).standard_normal((3, 4)), requires_grad=True)

    def loss_of(a, b):
        return ((a @ w).tanh() * b).sum()

    @numgrad.compile
    def step(a, b):
        w.grad = None
        loss = loss_of(a, b)
        loss.backward()
        return loss

    rng = np.random.default_rng(3)
    for _ in range(4):
        a = numgrad.tensor(rng.standard_normal((2, 3)))
        b = numgrad.tensor(rng.standard_normal((2, 4)))
        step(a, b)
    assert _replayed(step)
    wd, eps = w.detach().numpy().copy(), 1e-6
    num = np.zeros_like(wd)
    for i in np.ndindex(wd.shape):
        for sgn in (1, -1):
            v = wd.copy()
            v[i] += sgn * eps
            with numgrad.no_grad():
                out = ((a @ numgrad.tensor(v)).tanh() * b).sum().item()
            num[i] += sgn * out / (2 * eps)
    np.testing.assert_allclose(w.grad.numpy(), num, rtol=1e-6, atol=1e-8)


def _kernel_names(plan):
    names = []
    for fn, *_ in plan.steps:
        py = getattr(fn, "py_func", fn)
        names.append(getattr(py, "__qualname__", getattr(py, "__name__", "")))
    return names


def test_tracing_keeps_the_eager_gradient_steal():
    """Eager hands a rule's fresh gradient buffer to ``.grad`` without a copy; the record a
    trace keeps of that buffer must not turn the steal into a copy in the plan."""
    logits = numgrad.randn(64, 100, requires_grad=True)
    target = numgrad.randint(0, 100, (64,))

    def step():
        logits.grad = None
        loss = numgrad.nn.functional.cross_entropy(logits, target)
        loss.backward()
        return loss.detach()

    compiled = numgrad.compile(step)
    for _ in range(3):
        loss = compiled()
    assert _replayed(compiled)
    plan = _entries(compiled)[0].plan
    assert not [n for n in _kernel_names(plan) if "copy" in n], _kernel_names(plan)
    expected = step()
    assert np.array_equal(loss.numpy(), expected.numpy())


def test_a_python_number_argument_is_part_of_the_signature():
    """A number the function is called with is baked into the trace: another value traces
    again (as torch.compile recompiles), never replays the old one."""
    a = numgrad.arange(6.0)
    f = numgrad.compile(lambda a, s: a * s)
    for s in (1.0, 1.0, 2.0, 3.0, 2.0, -0.0, 0.0):
        got = f(a, s)
        assert _same_bits(got.numpy(), (a * s).numpy()), s


def test_a_global_number_is_part_of_the_signature():
    a = numgrad.arange(4.0)
    f = numgrad.compile(_scaled_by_global)
    global _SCALE
    for _SCALE in (2.0, 2.0, 2.0, 5.0, 5.0):
        assert _same_bits(f(a).numpy(), (a * _SCALE).numpy())


_SCALE = 2.0


def _scaled_by_global(a):
    return a * _SCALE


def _same_bits(x, y):
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def _training_parts():
    numgrad.manual_seed(0)
    model = numgrad.nn.Linear(4, 3)
    opt = numgrad.optim.SGD(model.parameters(), lr=0.1)
    x, y = numgrad.randn(8, 4), numgrad.randint(0, 3, (8,))
    return model, opt, x, y


def _eager_losses(steps):
    """Losses and final (parameter, gradient) pairs of eager training; checked against
    PyTorch from the same weights when it is installed."""
    model, opt, x, y = _training_parts()
    if torch is not None:
        tm = torch.nn.Linear(4, 3)
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(model.weight.detach().numpy()))
            tm.bias.copy_(torch.tensor(model.bias.detach().numpy()))
        topt = torch.optim.SGD(tm.parameters(), lr=0.1)
        tx, ty = torch.tensor(x.numpy()), torch.tensor(y.numpy())
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = numgrad.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
        if torch is not None:
            topt.zero_grad()
            tloss = torch.nn.functional.cross_entropy(tm(tx), ty)
            tloss.backward()
            topt.step()
            assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
    if torch is not None:
        for p, q in zip(model.parameters(), tm.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    return out, [(p.detach().numpy().copy(), p.grad.numpy().copy())
                 for p in model.parameters()]


def test_state_reached_through_a_wrapped_function_is_seen():
    """The compiled function is a wrapper; the model and optimizer are in the wrapped
    function's closure: their tensors (new ``.grad`` at every step) must be followed."""
    model, opt, x, y = _training_parts()

    def step():
        opt.zero_grad()
        loss = numgrad.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    def wrapper():
        return step()

    compiled = numgrad.compile(wrapper)
    losses = [compiled().item() for _ in range(6)]
    want, params = _eager_losses(6)
    assert losses == want
    for p, (q, g) in zip(model.parameters(), params):
        assert np.array_equal(p.detach().numpy(), q)
        assert np.array_equal(p.grad.numpy(), g)
    assert _replayed(compiled)


def test_state_reached_through_a_method_s_object_is_seen():
    class Trainer:
        def __init__(self):
            self.model, self.opt, self.x, self.y = _training_parts()

        def step(self):
            self.opt.zero_grad()
            loss = numgrad.nn.functional.cross_entropy(self.model(self.x), self.y)
            loss.backward()
            self.opt.step()
            return loss.detach()

    trainer = Trainer()
    compiled = numgrad.compile(trainer.step)
    losses = [compiled().item() for _ in range(6)]
    want, params = _eager_losses(6)
    assert losses == want
    for p, (q, g) in zip(trainer.model.parameters(), params):
        assert np.array_equal(p.detach().numpy(), q)
        assert np.array_equal(p.grad.numpy(), g)
    assert _replayed(compiled)


def _batchnorm_step(model, opt):
    F = numgrad.nn.functional

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def test_a_step_that_writes_state_before_a_check_replays_and_rolls_back():
    """BatchNorm updates its running statistics before cross_entropy checks the targets: the
    step still replays (the statistics are saved before each replay), and a replay whose check
    fails puts them back before eager runs and raises, so they are updated once, as eagerly."""
    def parts():
        numgrad.manual_seed(0)
        model = numgrad.nn.Sequential(numgrad.nn.Linear(5, 4), numgrad.nn.BatchNorm1d(4),
                                      numgrad.nn.ReLU(), numgrad.nn.Linear(4, 3))
        return model, numgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    rng = np.random.default_rng(2)
    xs = [numgrad.tensor(rng.standard_normal((8, 5)).astype(np.float32)) for _ in range(6)]
    ys = [numgrad.tensor(rng.integers(0, 3, 8)) for _ in range(6)]
    bad = numgrad.tensor(np.array([0, 1, 2, 3, 0, 1, 2, 0]))
    eager_model, eager_opt = parts()
    model, opt = parts()
    eager, compiled = _batchnorm_step(eager_model, eager_opt), numgrad.compile(
        _batchnorm_step(model, opt))
    for k in range(6):
        if k >= 3:  # replayed by now
            assert _replayed(compiled)
            for fn in (eager, compiled):
                with pytest.raises(IndexError, match="Target 3 is out of bounds"):
                    fn(xs[k], bad)
        assert eager(xs[k], ys[k]).item() == compiled(xs[k], ys[k]).item()
        for (name, a), (_, b) in zip(eager_model.state_dict().items(),
                                     model.state_dict().items()):
            assert np.array_equal(a.numpy(), b.numpy()), name
    assert _replayed(compiled)


def test_a_plan_missing_a_step_fails_verification(monkeypatch):
    # verification runs on the second call; with the inputs of the first, a trace-made buffer
    # still holds what the missing step would write. It starts as NaN bytes, so the broken
    # plan is refused and later calls with new inputs still give eager's results.
    from numgrad._compile import plan as plan_mod
    build = plan_mod.Plan.__init__

    def without_second_step(self, *args, **kwargs):
        build(self, *args, **kwargs)
        del self.steps[1]  # a kernel that writes an intermediate the next one reads
        self.fused = None

    monkeypatch.setattr(plan_mod.Plan, "__init__", without_second_step)
    x = numgrad.tensor(np.linspace(-1, 1, 64, dtype=np.float32), requires_grad=True)

    def step():
        y = ((x * 2 + 1).tanh() * x.sigmoid()).sum()
        y.backward()
        g, x.grad = x.grad, None
        return y.detach(), g

    f = numgrad.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            f()
        with numgrad.no_grad():
            x.add_(0.25)
        got = f()
    want = step()
    assert np.array_equal(got[0].numpy(), want[0].numpy())
    assert np.array_equal(got[1].numpy(), want[1].numpy())


def test_compile_steps_times_every_step_of_the_replay(monkeypatch, capsys):
    """``benchmarks/compile_steps.py`` times each step of the plan a compiled function replays
    (each once per call, summed by kernel; not the ``ascontiguousarray`` calls that returned
    their input, which the generated replay leaves out) and leaves the plan as before."""
    import os
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "benchmarks")
    monkeypatch.syspath_prepend(bench)
    import compile_steps
    x = numgrad.tensor(np.arange(6.0, dtype=np.float32))
    f = numgrad.compile(lambda: (x * 2 + 1).exp().sum())
    for _ in range(3):
        f()
    plan = f._last[1].plan
    items = [s for s in (plan.fused.items if plan.fused is not None else plan.steps)
             if s.__class__ is not tuple or s[0] is not np.ascontiguousarray or s[4]]
    monkeypatch.setattr(compile_steps, "build", lambda name, lib: f)
    compile_steps.profile("fake", False, 3, 50)
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and "W " in line]
    assert sum(int(r[3]) for r in rows) == len(items)
    assert "_steps" not in vars(plan)
    x.data.copy_(numgrad.tensor(np.arange(6.0, 12.0, dtype=np.float32)))
    np.testing.assert_array_equal(f().numpy(), (x * 2 + 1).exp().sum().numpy())
