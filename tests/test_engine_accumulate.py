"""The engine's gradient sums and graph storage: gradients that meet at one input are added
by the add kernel (in place into a sum the engine made), broadcast gradients are summed back
to their input's shape without an op, and a node keeps its edges in one flat tuple (a
binary op's two in two slots). Each is
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
    # edges were stored flat, 4.6 before one-edge nodes held their node alone and the version
    # checks took their short forms, 2.7 before two-edge nodes held their nodes in two slots,
    # 1.95 before version counters became dicts of ints, 1.61 after): a bound, so a change
    # that adds objects per node shows here
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
    # (the counters cost nothing where the collector leaves a dict of ints untracked)
    assert per_op < (2.3 if gc.is_tracked({0: 0}) else 1.8), per_op
    y.sum().backward()
    assert x.grad is not None


def _raises_same(fn):
    """``fn(lib)`` raises the same error class and message in numgrad and PyTorch."""
    errs = []
    for lib in (numgrad, torch):
        with pytest.raises(Exception) as e:
            fn(lib)
        errs.append((type(e.value).__name__, str(e.value)))
    assert errs[0] == errs[1]


@pytest.mark.parametrize("case", ["output", "input", "view_of_output", "both", "later_view"])
def test_version_checks_short_forms(case):
    # a node's checks in their short forms (saved tensors at version 0, its own saved output)
    # raise PyTorch's error, naming the tensor that changed
    def run(lib):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        a = x * 2.0
        if case == "output":
            y = a.exp()  # ExpBackward0 saves its result
            y.add_(1.0)
        elif case == "input":
            y = a * a  # MulBackward0 saves a (twice)
            a.mul_(3.0)
        elif case == "view_of_output":
            y = a.tanh()
            y[1:].zero_()
        elif case == "both":
            y = lib.logsumexp(a, 0)  # saves a and its result
            a.add_(1.0)
        else:
            v = a[0:2]  # a view made before the save shares a's counter
            y = a.sigmoid() * a
            v.add_(1.0)
        y.sum().backward()
    _raises_same(run)


def test_version_checks_in_place_result_and_retained():
    # a result saved, then written in place by the op's in-place form and modified again
    for lib_pair in [(numgrad, torch)]:
        msgs = []
        for lib in lib_pair:
            x = lib.tensor([0.5, 1.5], requires_grad=True)
            a = x * 1.0
            a.exp_()
            b = a * 2.0
            b.sum().backward(retain_graph=True)
            a.add_(1.0)
            with pytest.raises(RuntimeError) as e:
                b.sum().backward()
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_one_element_operand_matches_torch_bitwise():
    # a tensor and a one-element tensor of its dtype (0-d or (1,)) on either side: the scalar
    # kernel's result, bit for bit PyTorch's, with PyTorch's gradients and next_functions
    rng = np.random.default_rng(3)
    vals = np.concatenate([rng.standard_normal(40) * 10.0 ** rng.integers(-30, 30, 40),
                           [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3e38]])
    for dt in (np.float32, np.float64):
        a = vals.astype(dt)
        for s in a[::9]:
            for shape in ((), (1,)):
                b = np.array(s, dt).reshape(shape)
                for op, left in (("add", 0), ("sub", 0), ("mul", 0), ("div", 0), ("add", 1),
                                 ("mul", 1)):
                    args = [(b, a), (a, b)][1 - left]
                    ours = getattr(numgrad, op)(*[numgrad.tensor(v) for v in args]).numpy()
                    ref = getattr(torch, op)(*[torch.tensor(v) for v in args]).numpy()
                    assert ours.dtype == ref.dtype and ours.shape == ref.shape
                    assert np.array_equal(ours.view(np.uint8), ref.view(np.uint8)), (op, s)
    for op in ("add", "sub", "mul", "div"):
        x0, s0 = rng.standard_normal(5).astype(np.float32), np.float32(1.5)
        for shape in ((), (1,)):
            (gx, gs), (tx, ts) = _both(
                lambda lib, x, s, op=op: (getattr(lib, op)(x, s) * x).sum(),
                x0, np.array(s0).reshape(shape))
            assert gs.shape == ts.shape == shape
            np.testing.assert_allclose(gx, tx, rtol=1e-6)
            np.testing.assert_allclose(gs, ts, rtol=1e-6)
    s = numgrad.tensor(2.0, requires_grad=True)
    x = numgrad.tensor([1.0, 2.0], requires_grad=True)
    nf = (s * x).grad_fn.next_functions
    assert [e[0].variable for e in nf] == [s, x] and [e[1] for e in nf] == [0, 0]


@pytest.mark.parametrize("parts", ["scalars", "rows", "strided", "mixed_dtype", "no_grad"])
def test_stack_matches_torch(parts):
    # stack along dim 0 of tensors of one dtype copies each part into its block; the values,
    # gradients and StackBackward0's edges are PyTorch's
    rng = np.random.default_rng(4)
    base = rng.standard_normal((3, 4)).astype(np.float32)
    res = []
    for lib in (numgrad, torch):
        x = lib.tensor(base, requires_grad=parts != "no_grad")
        if parts == "scalars":
            ts = [x[i, j] * 1.0 for i in range(3) for j in range(2)]
        elif parts == "rows":
            ts = [x[i] for i in range(3)]
        elif parts == "strided":
            ts = [x[:, j] for j in range(4)]  # non-contiguous columns
        elif parts == "mixed_dtype":
            ts = [x[0], x[1].double()]
        else:
            ts = [x[i] for i in range(3)]
        y = lib.stack(ts)
        out = [y.detach().numpy().copy()]
        if y.requires_grad:
            assert type(y.grad_fn).__name__ == "StackBackward0"
            assert len(y.grad_fn.next_functions) == len(ts)
            (y * lib.arange(y.numel()).reshape(y.shape)).sum().backward()
            out.append(x.grad.numpy().copy())
        res.append(out)
    for ours, ref in zip(*res):
        assert ours.dtype == ref.dtype
        np.testing.assert_array_equal(ours, ref)


def test_two_int_index_matches_torch():
    # x[i, j] with ints in range takes two selects directly; out of range, PyTorch's errors
    for key in ((1, 2), (-1, -3), (0, 0)):
        x0 = np.arange(12.0).reshape(3, 4)
        y, t = numgrad.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
        a, b = y[key], t[key]
        assert a.item() == b.item() and type(a.grad_fn).__name__ == "SelectBackward0"
        a.backward()
        b.backward()
        np.testing.assert_array_equal(y.grad.numpy(), t.grad.numpy())
    for key in ((3, 0), (0, 4), (-4, 0), (0, -5)):
        _raises_same(lambda lib, key=key: lib.zeros(3, 4)[key])
    _raises_same(lambda lib: lib.zeros(3)[1, 0])


def test_two_edge_nodes_keep_pytorch_edges():
    # a binary op's two (node, 0) edges are stored without a tuple of their own: the edges
    # PyTorch shows, None ones included, the setter's forms, and stack of two parts
    x = numgrad.tensor([1.0, 2.0], requires_grad=True)
    c = numgrad.tensor([3.0, 4.0])
    z = x * c
    assert z.grad_fn.next_functions == ((z.grad_fn.next_functions[0][0], 0), (None, 0))
    assert (c * x).grad_fn.next_functions[0] == (None, 0)
    y = numgrad.stack([z, x])
    nf = y.grad_fn.next_functions
    assert nf[0] == (z.grad_fn, 0) and nf[1][0].variable is x
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 5.0]
    node = (x + x).grad_fn
    acc = node.next_functions[0][0]
    for edges in (((acc, 0), (None, 0)), ((acc, 1), (acc, 0)), ((acc, 0),), ((None, 0),),
                  ((acc, 0), (acc, 0), (None, 0))):
        node.next_functions = edges
        assert node.next_functions == edges


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_logsumexp_backward_is_its_three_steps(dtype):
    # a 1-D logsumexp's backward, one kernel call, is bit for bit g * exp(x - lse) computed
    # by the sub, exp and mul ops, and PyTorch's within rounding; inf and -inf included
    rng = np.random.default_rng(3)
    cases = [rng.standard_normal(6) * 20, [1.0, -np.inf, 3.0], [-np.inf, -np.inf],
             [np.inf, 1.0], [2.5], [80.0, -80.0, 0.0]]
    for vals in cases:
        a = np.array(vals, dtype)
        x = numgrad.tensor(a, requires_grad=True)
        y = numgrad.logsumexp(x * 1.0, 0)
        assert y.grad_fn.name() == "LogsumexpBackward0" and y.shape == ()
        (y * 0.75).backward()
        with numgrad.no_grad():
            want = (x - y).exp() * numgrad.tensor(0.75, dtype=x.dtype)
        assert x.grad.dtype == x.dtype
        np.testing.assert_array_equal(x.grad.numpy(), want.numpy())
        t = torch.tensor(a, requires_grad=True)
        ty = torch.logsumexp(t * 1.0, 0)
        (ty * 0.75).backward()
        assert y.item() == ty.item() or np.isnan(y.item()) and np.isnan(ty.item())
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=2e-6, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_select_gradients_add_into_the_fan_in_sum(dtype):
    # x[i] gradients arriving after x's sum was started go into row i of that sum (one
    # kernel pass): equal to PyTorch's zeros-then-add bit for bit, the zeros' signs included
    # (x * (w * 0.0) gives -0.0 where w < 0, and -0.0 + 0.0 is +0.0 outside the row)
    x0 = np.arange(12, dtype=dtype).reshape(4, 3) * 0.5 - 2.0
    w0 = np.array([[-1, 1, 2], [1, -1, 0], [-2, -3, 1], [1, 1, -1]], dtype=dtype)
    v0 = np.array([-1, 2, -3, 4, 0.5], dtype=dtype)

    def f(lib, x, w, v):
        # the selects first: the engine runs the newest nodes first, so the dense gradients
        # arrive first and the selects' add into their sum
        rows = x[1].sum() * 2.0 + x[-1][2] * 3.0 + x[1][0] + x[3].sum() * 0.25
        elems = v[0] * 1.5 + v[-2] + v[0] * 4.0 + sum(v[i] * i for i in range(5))
        zero = w * 0.0
        dense = (x * zero).sum() + (x * zero).sum() + (v * v.flip(0) * 0.0).sum() * 2.0
        return rows + elems + dense

    ours, theirs = _both(f, x0, w0, v0)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), (a, b)


def test_select_gradients_with_hooks_and_retained_graph():
    # a tensor hook on x sees the whole sum; a hook on a select's node sees its own dense
    # gradient; a second backward through the retained graph gives the same gradients
    seen = {}
    for lib in (numgrad, torch):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
        x.register_hook(lambda g, lib=lib: seen.setdefault(lib, []).append(g.clone()))
        y = x * 2.0
        r = y[1]
        r.grad_fn.register_hook(
            lambda gi, go, lib=lib: seen.setdefault((lib, "node"), []).append(gi[0].clone()))
        loss = (y * y).sum() + r.sum() * 3.0 + y[2][1] + y[0].sum()
        loss.backward(retain_graph=True)
        loss.backward()
        seen[lib, "grad"] = x.grad
    for key in (numgrad, (numgrad, "node")):
        other = torch if key is numgrad else (torch, "node")
        assert len(seen[key]) == len(seen[other]) == 2
        for a, b in zip(seen[key], seen[other]):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(seen[numgrad, "grad"].numpy(), seen[torch, "grad"].numpy())
