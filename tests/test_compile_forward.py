"""numgrad.compile's forward form: ``out = f(x)`` replayed, its backward one compiled node.
(Training through ``numgrad.compile(model)`` against eager and PyTorch: test_compile.py.)"""

import warnings

import numpy as np
import pytest

import numgrad
from numgrad._compile.forward import DOUBLE_BACKWARD
from tests.op_cases import CASES, IDS
from tests.test_compile import _replayed_as, _tensors


def _forward_replayed(compiled):
    return _replayed_as(compiled, "forward")


def _outputs_and_grads(fn, arrays):
    """Call ``fn`` on new leaves, backpropagate the sum of every output that requires grad
    outside it; the outputs and the leaves' gradients."""
    ts = [numgrad.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    diff = [o for o in outs if o.requires_grad]
    if diff:
        total = diff[0].sum()
        for o in diff[1:]:
            total = total + o.sum()
        total.backward()
    return ([o.detach().numpy() for o in outs],
            [None if t.grad is None else t.grad.numpy() for t in ts])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_op_table_forward_form_matches_eager(case):
    """Every op of the table called through the compiled forward, backpropagated outside."""
    op = case[1]

    def fn(*ts):
        return op(numgrad, *ts)

    compiled = numgrad.compile(fn)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            arrays = _tensors(case, rng)
            try:
                want = _outputs_and_grads(fn, arrays)
            except Exception as exc:
                with pytest.raises(type(exc)):
                    _outputs_and_grads(compiled, arrays)
                return
            got = _outputs_and_grads(compiled, arrays)
            for w, g in zip(want[0] + want[1], got[0] + got[1]):
                if w is None:
                    assert g is None
                else:
                    np.testing.assert_array_equal(g, w)


def test_most_of_the_op_table_replays_the_forward_form():
    replayed, eager = [], []
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in CASES:
            op = case[1]
            compiled = numgrad.compile(lambda *ts, op=op: op(numgrad, *ts))
            try:
                for _ in range(3):
                    _outputs_and_grads(compiled, _tensors(case, rng))
            except Exception:
                continue
            (replayed if _forward_replayed(compiled) else eager).append(case[0])
    assert len(replayed) >= 0.8 * (len(replayed) + len(eager)), eager


def test_the_backward_is_one_compiled_node():
    w = numgrad.ones(3, requires_grad=True)
    b = numgrad.zeros(3, requires_grad=True)
    f = numgrad.compile(lambda a: (a * w + b).tanh().sum())
    for _ in range(3):
        loss = f(numgrad.full((3,), 0.5))
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    nxt = loss.grad_fn.next_functions
    assert [type(n).__name__ for n, _ in nxt] == ["AccumulateGrad", "AccumulateGrad"]
    assert {id(n.variable) for n, _ in nxt} == {id(w), id(b)}
    loss.backward()
    g = 1 - np.tanh(np.float32(0.5)) ** 2
    np.testing.assert_allclose(w.grad.numpy(), [0.5 * g] * 3, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), [g] * 3, rtol=1e-6)


def test_several_outputs_and_incoming_gradients():
    """Two outputs, one not differentiable, combined with other ops before the backward."""
    rng = np.random.default_rng(4)
    w = numgrad.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)

    def fn(x):
        h = x @ w
        return {"h": h.sigmoid(), "s": (h * h).sum(1), "n": h.argmax(1)}

    f = numgrad.compile(fn)
    for _ in range(4):
        x = numgrad.tensor(rng.standard_normal((5, 4)).astype(np.float32), requires_grad=True)
        for g in (f, fn):
            w.grad = x.grad = None
            out = g(x)
            assert not out["n"].requires_grad
            ((out["h"] * 3).mean() + out["s"][1:].pow(2).sum()).backward()
            if g is f:
                got = [out["h"], out["s"], out["n"], w.grad, x.grad]
            else:
                want = [out["h"], out["s"], out["n"], w.grad, x.grad]
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert _forward_replayed(f)
    assert got[0].grad_fn.name() == "CompiledFunctionBackward"


def test_non_scalar_backward_with_a_gradient():
    w = numgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    f = numgrad.compile(lambda a: a * w * w)
    for _ in range(3):
        w.grad = None
        out = f(numgrad.tensor([2.0, 3.0, 4.0]))
        out.backward(numgrad.tensor([1.0, 10.0, 100.0]))
    assert _forward_replayed(f)
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, -120.0, 2400.0])


def test_two_forward_calls_backpropagated_together():
    """Saved buffers are per call: the second call does not overwrite the first's."""
    w = numgrad.tensor([0.5, -1.0], requires_grad=True)
    f = numgrad.compile(lambda a: (a * w).tanh().sum())
    xs = [numgrad.tensor([1.0, 2.0]), numgrad.tensor([3.0, -1.0])]
    for _ in range(3):
        f(xs[0])
    w.grad = None
    (f(xs[0]) + 2 * f(xs[1])).backward()
    got = w.grad.numpy().copy()
    w.grad = None
    ((xs[0] * w).tanh().sum() + 2 * (xs[1] * w).tanh().sum()).backward()
    assert _forward_replayed(f)
    np.testing.assert_array_equal(got, w.grad.numpy())


def test_backward_twice_needs_retain_graph():
    w = numgrad.tensor([0.5, -1.0], requires_grad=True)
    f = numgrad.compile(lambda a: (a * w).exp().sum())
    for _ in range(3):
        loss = f(numgrad.tensor([1.0, 2.0]))
    loss.backward(retain_graph=True)
    once = w.grad.numpy().copy()
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), 2 * once)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        loss.backward()


def test_in_place_change_of_a_saved_tensor_is_an_error():
    w = numgrad.tensor([0.5, -1.0], requires_grad=True)
    f = numgrad.compile(lambda a: (a * w).sum())
    for _ in range(3):
        loss = f(numgrad.tensor([1.0, 2.0], requires_grad=True))
    with numgrad.no_grad():
        w.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: "
                       r"\[torch.FloatTensor \[2\]\] is at version 1; expected version 0"):
        loss.backward()


def test_in_place_change_of_a_saved_output_is_an_error():
    w = numgrad.tensor([0.5, -1.0], requires_grad=True)
    f = numgrad.compile(lambda a: (a * w).tanh())  # tanh's backward reads its output
    for _ in range(3):
        out = f(numgrad.tensor([1.0, 2.0]))
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    out.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_create_graph_gradients_cannot_be_differentiated_again():
    w = numgrad.tensor([0.5, -1.0], requires_grad=True)
    f = numgrad.compile(lambda a: (a * w).tanh().sum())
    x = numgrad.tensor([1.0, 2.0])
    for _ in range(3):
        loss = f(x)
    (g,) = numgrad.autograd.grad(loss, w, create_graph=True)
    want = (1 - np.tanh(x.numpy() * w.detach().numpy()) ** 2) * x.numpy()
    np.testing.assert_allclose(g.detach().numpy(), want, rtol=1e-6)
    assert g.grad_fn.name() == "CompiledFunctionBackwardBackward"
    with pytest.raises(RuntimeError, match=DOUBLE_BACKWARD):
        g.sum().backward()


def test_hooks_on_parameters_run_at_backward():
    w = numgrad.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g.numpy().copy()))
    f = numgrad.compile(lambda a: (a * w).sum())
    for k in range(4):
        f(numgrad.tensor([float(k), 1.0])).backward()
    assert _forward_replayed(f)
    assert [s.tolist() for s in seen] == [[0.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]]


def test_inputs_with_history_run_eagerly():
    """An argument computed before the call: its graph continues outside the compiled one."""
    w = numgrad.tensor([1.0, 2.0], requires_grad=True)
    f = numgrad.compile(lambda a: (a * a).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            w.grad = None
            f(w * 3).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [18.0, 36.0])
    assert not _forward_replayed(f)


def test_float64_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    w = numgrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    f = numgrad.compile(lambda a, b: ((a @ w).sigmoid() * b).sum())
    for _ in range(4):
        a = numgrad.tensor(rng.standard_normal((2, 3)))
        b = numgrad.tensor(rng.standard_normal((2, 4)))
        w.grad = None
        f(a, b).backward()
    assert _forward_replayed(f)
    wd, eps = w.detach().numpy().copy(), 1e-6
    num = np.zeros_like(wd)
    for i in np.ndindex(wd.shape):
        for sgn in (1, -1):
            v = wd.copy()
            v[i] += sgn * eps
            num[i] += sgn * (1 / (1 + np.exp(-(a.numpy() @ v))) * b.numpy()).sum() / (2 * eps)
    np.testing.assert_allclose(w.grad.numpy(), num, rtol=1e-6, atol=1e-9)


def test_a_gradient_passed_through_is_not_the_callers_buffer():
    """d(a + w)/dw is the output gradient itself: ``.grad`` must not share its memory."""
    w = numgrad.tensor([1.0, 2.0], requires_grad=True)
    f = numgrad.compile(lambda a: a + w)
    for _ in range(3):
        w.grad = None
        out = f(numgrad.tensor([1.0, 1.0]))
        g = numgrad.tensor([3.0, 4.0])
        out.backward(g)
    assert _forward_replayed(f)
    out = f(numgrad.tensor([1.0, 1.0]))
    out.backward(g)  # accumulates into w.grad in place
    np.testing.assert_array_equal(g.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 8.0])
