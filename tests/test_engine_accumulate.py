"""The engine's gradient sums and graph storage: gradients that meet at one input are added
by the add kernel (in place into a sum the engine made), broadcast gradients are summed back
to their input's shape without an op, and a node keeps its edges in one flat tuple. Each is
checked against PyTorch, bit for bit where the arithmetic is the same."""

import gc

import numpy as np
import pytest

import numgrad

torch = pytest.importorskip("torch")


def _both(fn, *arrays):
    """``fn(lib, *leaves)`` run in numgrad and PyTorch; the leaves' gradients of both."""
    out = []
    for lib in (numgrad, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        fn(lib, *leaves).backward()
        out.append([t.grad.numpy() for t in leaves])
    return out


def test_fan_in_sums_match_torch():
    # x meets five consumers and the leaf w gets a gradient from each of ten products
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((2, 7)).astype(np.float32)

    def f(lib, x, w):
        y = x * 1.5
        parts = [y * w, y.tanh(), y + w, y[2] * w, (y * y).sum() * w]
        return sum(p.sum() for p in parts) + sum((w * k).sum() for k in range(5))

    ours, theirs = _both(f, x0, w0)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_fan_in_sum_is_the_sum_of_the_parts_bit_for_bit():
    # the same additions in the same order as summing the branch gradients by hand
    x = numgrad.tensor(np.linspace(-1, 1, 5, dtype=np.float32), requires_grad=True)
    ks = [0.3, 1.7, -2.1, 0.9]
    sum(((x * k).tanh()).sum() for k in ks).backward()
    expected = None
    for k in reversed(ks):  # the engine runs the newest branch first, as PyTorch's does
        xk = numgrad.tensor(x.detach().numpy(), requires_grad=True)
        ((xk * k).tanh()).sum().backward()
        expected = xk.grad.numpy() if expected is None else expected + xk.grad.numpy()
    assert np.array_equal(x.grad.numpy(), expected)


def test_a_gradient_given_to_two_inputs_is_not_written_by_later_sums():
    # AddBackward0 hands one gradient tensor to both of its inputs; one input then gets more
    # gradients added while a hook keeps what arrived at the other
    seen = {}
    for lib in (numgrad, torch):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        u = a * 2.0
        v = b * 3.0
        kept = []
        v.register_hook(kept.append)
        s = u + v  # the same gradient reaches u and v
        loss = (s * s).sum() + (u * u).sum() + u.sum()
        u.retain_grad()
        loss.backward()
        seen[lib] = (kept[0].detach().numpy().copy(), u.grad.numpy(), a.grad.numpy(),
                     b.grad.numpy())
    for ours, theirs in zip(seen[numgrad], seen[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_hook_keeps_a_summed_gradient_unchanged():
    x = numgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    kept = []
    y.register_hook(lambda g: kept.append(g))
    z = y * 2.0 + y * 3.0 + y  # three gradients summed at y
    (z * x).sum().backward()
    assert kept[0].tolist() == [6.0, 12.0]
    assert x.grad.tolist() == [6.0 + 6.0, 12.0 + 12.0]


def test_fan_in_with_create_graph_stays_differentiable():
    for lib in (numgrad, torch):
        x = lib.tensor([0.5, -1.5, 2.0], requires_grad=True)
        y = (x * x).tanh() + x * 3.0 + (x * x * x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        if lib is numgrad:
            ours = (g.detach().numpy(), gg.numpy())
        else:
            theirs = (g.detach().numpy(), gg.numpy())
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shapes", [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((1, 1, 4), (3, 4)),
                                    ((), (2, 3)), ((2, 1, 3), (2, 5, 1))])
def test_broadcast_gradients_summed_back(shapes):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ours, theirs = _both(lambda lib, a, b: (a * b + a).sum(), *arrays)
    for a, b, s in zip(ours, theirs, shapes):
        assert a.shape == s
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_broadcast_gradient_double_precision_and_dtype_cast():
    a = numgrad.tensor(np.ones((2, 3)), requires_grad=True)  # float64
    b = numgrad.tensor(np.ones(3, np.float32), requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype is numgrad.float64 and b.grad.dtype is numgrad.float32
    assert b.grad.tolist() == [2.0, 2.0, 2.0]


def test_next_functions_as_pytorch_shows_them():
    x = numgrad.tensor([1.0], requires_grad=True)
    y = numgrad.tensor([2.0], requires_grad=True)
    z = x * y
    nf = z.grad_fn.next_functions
    assert len(nf) == 2 and all(len(e) == 2 for e in nf)
    assert nf[0][0].variable is x and nf[1][0].variable is y and nf[0][1] == nf[1][1] == 0
    w = (z + 1.0).exp()
    assert w.grad_fn.next_functions == ((w.grad_fn.next_functions[0][0], 0),)
    assert w.grad_fn.next_functions[0][0].next_functions[0][0] is z.grad_fn
    assert numgrad.stack([x, y, z]).grad_fn.next_functions[2] == (z.grad_fn, 0)
    assert x.grad_fn is None and nf[0][0].next_functions == ()


def test_graph_objects_per_op():
    # what a recorded op leaves for the garbage collector to track (6.3 per op before the
    # edges were stored flat): a bound, so a change that adds objects per node shows here
    x = numgrad.randn(4, requires_grad=True)
    w = numgrad.randn(4, requires_grad=True)

    def chain(n):
        y = x
        for _ in range(n):
            y = (y * w).tanh() + x
        return y

    chain(5).sum().backward()
    gc.collect()
    n0 = len(gc.get_objects())
    y = chain(300)
    gc.collect()
    per_op = (len(gc.get_objects()) - n0) / 900
    assert per_op < 5.0, per_op
    y.sum().backward()
    assert x.grad is not None
