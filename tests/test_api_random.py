"""Sampling against PyTorch: ``multinomial``, ``exponential_``, ``bernoulli``/``bernoulli_``
and ``normal`` with tensor arguments give PyTorch's CPU samples bit for bit from the same seed
(float32 normals too, where PyTorch's build is x86: ``EXACT32``), leave the
generator where PyTorch leaves it (a draw after them matches), record PyTorch's nodes, and
raise PyTorch's errors. Also the factory spellings (``size=``, ``randint`` overloads)."""

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng

pytestmark = requires_torch


def both(code, seed=0, **env):
    """``code`` run under numgrad and PyTorch from one seed, with a draw after it (the
    generator state); tensors become arrays."""
    out = []
    for m in (ng, torch):
        m.manual_seed(seed)
        scope = {"m": m, "np": np}
        scope.update({k: (m.tensor(v) if isinstance(v, np.ndarray) else v)
                      for k, v in env.items()})
        r = eval(code, scope)
        after = m.rand(3, dtype=m.float64).numpy()
        out.append((_arrays(r), after))
    return out


def _arrays(r):
    if isinstance(r, (list, tuple)):
        return [_arrays(x) for x in r]
    return r.detach().numpy() if hasattr(r, "detach") else r


def assert_same(code, seed=0, **env):
    (ours, our_after), (theirs, their_after) = both(code, seed, **env)
    pairs = zip(ours, theirs) if isinstance(ours, list) else [(ours, theirs)]
    for a, b in pairs:
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, code
        np.testing.assert_array_equal(a, b, err_msg=code)
    np.testing.assert_array_equal(our_after, their_after, err_msg=f"state after {code}")


def error_of(m, code, **env):
    scope = {"m": m, "np": np}
    scope.update({k: (m.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in env.items()})
    try:
        eval(code, scope)
    except Exception as e:  # noqa: BLE001  (any class: compared with PyTorch's)
        return type(e).__name__, str(e).replace("numgrad", "torch")
    return None


def assert_same_error(code, **env):
    ours, theirs = error_of(ng, code, **env), error_of(torch, code, **env)
    assert theirs is not None, code
    assert ours == theirs, code


# ------------------------------------------------------------------------------ multinomial


def _multinomial_cases():
    rng = np.random.default_rng(14)
    cases = []
    for i in range(120):
        dtype = (np.float32, np.float64)[i % 2]
        shape = (int(rng.integers(1, 40)),) if i % 3 else \
            (int(rng.integers(1, 6)), int(rng.integers(1, 40)))
        p = (rng.random(shape) ** 3 * float(rng.integers(1, 100))).astype(dtype)
        if i % 5 == 0 and shape[-1] > 2:
            p[..., 1] = 0  # zero weights are never drawn
        replacement = bool(i % 4 >= 2)
        top = shape[-1] if not replacement else 50
        n = int(rng.integers(1, top + 1))
        if not replacement and i % 5 == 0 and shape[-1] > 2:
            n = min(n, shape[-1] - 1)  # the zero category ties with nothing
        cases.append((p, n, replacement, int(rng.integers(1 << 40))))
    return cases


@pytest.mark.parametrize("p, n, replacement, seed", _multinomial_cases())
def test_multinomial_matches_pytorch_bit_for_bit(p, n, replacement, seed):
    assert_same("m.multinomial(p, n, replacement)", seed, p=p, n=n, replacement=replacement)


@pytest.mark.parametrize("code", [
    "p.multinomial(3)", "p.multinomial(5, True)", "p.multinomial(num_samples=2, replacement=True)",
    "m.multinomial(p.t(), 2)", "m.multinomial(p.t(), 4, True)", "m.multinomial(p[:, ::2], 2)",
    "m.multinomial(p[1], 1)", "m.multinomial(p[1], 1, True)", "m.multinomial(p, 6)",
    "m.multinomial(p.double(), 3)", "m.multinomial(input=p, num_samples=2)",
    "m.multinomial(p, m.tensor(2))", "m.multinomial(p, 2, generator=m.Generator().manual_seed(5))",
    "[m.multinomial(p, 2), m.multinomial(p, 3, True), m.multinomial(p[0], 4)]",
    "m.multinomial(m.tensor([3e38, 3e38]), 3, True)", "m.multinomial(m.ones(0, 3), 2)",
    "m.multinomial(m.ones(0, 3), 2, True)",
])
def test_multinomial_spellings_and_layouts(code):
    p = np.random.default_rng(2).random((4, 6)).astype(np.float32)
    assert_same(code, 11, p=p)


def test_multinomial_out_and_gpt_sampling_loop():
    for m in (ng, torch):
        m.manual_seed(3)
    p = np.random.default_rng(3).random((2, 5)).astype(np.float32)
    results = []
    for m in (ng, torch):
        m.manual_seed(3)
        out = m.empty(7, dtype=m.int64)
        r = m.multinomial(m.tensor(p), 3, out=out)
        probs = m.softmax(m.tensor(p) * 4, dim=-1)
        picks = [m.multinomial(probs, num_samples=1) for _ in range(5)]
        results.append((r is out, out.numpy(), m.cat(picks, 1).numpy()))
    assert results[0][0] and results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_array_equal(results[0][2], results[1][2])
    x = ng.tensor(p, requires_grad=True)
    assert ng.multinomial(x, 2).grad_fn is None and ng.multinomial(x, 2).dtype is ng.int64


@pytest.mark.parametrize("code", [
    "m.multinomial(m.tensor([1., -1.]), 1)", "m.multinomial(m.tensor([1., -1.]), 2, True)",
    "m.multinomial(m.tensor([1., float('inf')]), 1)",
    "m.multinomial(m.tensor([1., float('inf')]), 2, True)",
    "m.multinomial(m.tensor([1., float('nan')]), 2, True)",
    "m.multinomial(m.tensor([1., float('nan')]), 2)",
    "m.multinomial(m.tensor([0., 0.]), 1)", "m.multinomial(m.tensor([0., 0.]), 2, True)",
    "m.multinomial(m.tensor([[1., 1.], [0., 0.]]), 1)",
    "m.multinomial(m.tensor([[0., 0.], [1., -1.]]), 2, True)",
    "m.multinomial(m.tensor([[0., 0.], [1., -1.]]), 1)",
    "m.multinomial(m.tensor([[1., float('inf')], [1., -1.]]), 2, True)",
    "m.multinomial(m.tensor([1., 1.]), 3)", "m.multinomial(m.tensor(1.), 1)",
    "m.multinomial(m.ones(2, 2, 2), 1)", "m.multinomial(m.tensor([1, 2]), 1)",
    "m.multinomial(m.tensor([True]), 1)", "m.multinomial(m.tensor([1., 2.]), 0)",
    "m.multinomial(m.tensor([1., 2.]), -1)", "m.multinomial(m.tensor([1., 2.]), 1.5)",
    "m.multinomial(m.tensor([1., 2.]), True)", "m.multinomial(m.tensor([1., 2.]), 2**63)",
    "m.multinomial(m.tensor([1., 2.]), num_samples=1.5)", "m.ones(3).multinomial(1.5)",
    "m.multinomial(m.ones(0), 1)", "m.multinomial(m.ones(0), 1, True)",
    "m.multinomial(m.ones(3, 0), 1, True)", "m.multinomial(m.ones(3, 0), 2)",
    "m.multinomial([1., 2.], 1)", "m.multinomial(m.tensor([1., 2.]), 1, out=m.empty(3))",
    "m.multinomial(m.tensor([1., 2.]), 1, generator=1)",
    "m.multinomial(m.ones(3), 2, False, None)", "m.multinomial(m.ones(3), 2, 1)",
    "m.multinomial(m.ones(3), 2, None)", "m.multinomial(m.ones(3), 2, replacement=None)",
    "m.multinomial(m.ones(3))", "m.multinomial(m.ones(3), 2, foo=1)",
    "m.multinomial(m.ones(2**24 + 1), 1)",
])
def test_multinomial_errors(code):
    assert_same_error(code)


def test_multinomial_error_draws_nothing():
    for m in (ng, torch):
        m.manual_seed(1)
        with pytest.raises(RuntimeError):
            m.multinomial(m.tensor([[1., 1.], [0., 0.]]), 1)
    assert_same("m.rand(2)", 1)


# ------------------------------------------------------------------------------ exponential_


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("code", [
    "m.empty(1000, dtype=d).exponential_()", "m.empty(7, 5, dtype=d).exponential_(2.5)",
    "m.empty(7, 5, dtype=d).exponential_(lambd=0.3)", "m.empty(4, 6, dtype=d).t().exponential_()",
    "m.empty(4, 6, dtype=d)[:, ::2].exponential_(7)",
    "m.empty(3, dtype=d).exponential_(m.tensor(2.))", "m.empty(0, dtype=d).exponential_()",
    "m.empty(3, dtype=d).exponential_(float('inf'))",
    "m.empty(5, dtype=d).exponential_(generator=m.Generator().manual_seed(9))",
])
def test_exponential_matches_pytorch_bit_for_bit(code, dtype):
    assert_same(code.replace("dtype=d", f"dtype=m.{dtype}"), 21)


def test_exponential_node_and_view():
    out = []
    for m in (ng, torch):
        m.manual_seed(2)
        x = m.ones(3, 4, requires_grad=True)
        y = x * 2
        y[1].exponential_()
        z = x * 3
        z.exponential_()
        (y.sum() + z.sum()).backward()
        out.append((type(z.grad_fn).__name__, y.detach().numpy(), x.grad.numpy()))
    assert out[0][0] == out[1][0] == "ExponentialBackward0"
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][2], out[1][2])


@pytest.mark.parametrize("code", [
    "m.empty(3).exponential_(0)", "m.empty(3).exponential_(-1)",
    "m.empty(3).exponential_(float('nan'))", "m.empty(3, dtype=m.int64).exponential_()",
    "m.empty(3, dtype=m.bool).exponential_()", "m.ones(3, requires_grad=True).exponential_()",
    "m.empty(3).exponential_(1, 2)", "m.empty(3).exponential_(lambda_=2)",
])
def test_exponential_errors(code):
    assert_same_error(code)


# -------------------------------------------------------------------------------- bernoulli


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("code", [
    "m.bernoulli(p)", "p.bernoulli()", "m.bernoulli(p.t())", "m.bernoulli(p, 0.3)",
    "p.bernoulli(p=0.7)", "m.bernoulli(p.t(), 0.4)", "m.bernoulli(p.long(), 0.5)",
    "m.empty(5, 6, dtype=m.int64).bernoulli_(p)", "m.empty(6, 5).t().bernoulli_(p)",
    "m.empty(6, 5, dtype=m.bool).bernoulli_(p[:1, :5])", "m.empty(6, 5).t().bernoulli_(p[:, :1])",
    "m.empty(6, 5).bernoulli_(0.3)", "m.empty(6, 5, dtype=m.int64).t().bernoulli_(0.6)",
    "m.empty(1000).bernoulli_()", "m.empty(0).bernoulli_(p[0, :0])",
    "m.bernoulli(p, generator=m.Generator().manual_seed(4))",
    "m.empty(3).bernoulli_(1.0)", "m.empty(3).bernoulli_(0.0)",
])
def test_bernoulli_matches_pytorch_bit_for_bit(code, dtype):
    p = np.random.default_rng(1).random((5, 6)).astype(dtype)
    p[0, 0], p[0, 1] = 0.0, 1.0
    assert_same(code, 8, p=p)


def test_bernoulli_out_nodes_and_dropout():
    p = np.random.default_rng(5).random((3, 4)).astype(np.float32)
    res = []
    for m in (ng, torch):
        m.manual_seed(6)
        out = m.empty(3, 4, dtype=m.float64)
        m.bernoulli(m.tensor(p, dtype=m.float64), out=out)
        x = m.tensor(p, requires_grad=True)
        a, b = m.bernoulli(x), m.bernoulli(x, 0.5)
        c, d = (x * 1).bernoulli_(0.2), (x * 1).bernoulli_(x.detach())
        e = m.nn.functional.dropout(m.ones(50), 0.3)
        (a.sum() + c.sum() + d.sum()).backward()
        res.append([out.numpy(), e.numpy(), x.grad.numpy(),
                    [type(t.grad_fn).__name__ for t in (a, b, c, d)], b.grad_fn.name()])
        with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not implemented"):
            b.sum().backward()
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])  # dropout draws bernoulli_(1 - p)
    np.testing.assert_array_equal(res[0][2], res[1][2])
    assert res[0][3] == res[1][3] == ["BernoulliBackward0", "NotImplemented",
                                      "BernoulliBackward2", "BernoulliBackward1"]
    assert res[0][4] == res[1][4]


def test_dropout_of_a_transposed_tensor_draws_pytorchs_mask():
    """PyTorch fills ``empty_like(input)`` (the input's memory layout) in memory order: the
    mask of a transposed input is drawn along its memory, not along its rows."""
    x = np.arange(1, 61, dtype=np.float32).reshape(6, 10)
    res = []
    for m in (ng, torch):
        m.manual_seed(3)
        t = m.tensor(x).t()
        res.append([m.nn.functional.dropout(t, 0.4).numpy(),
                    m.nn.functional.dropout(m.tensor(x).reshape(2, 3, 10).permute(2, 0, 1),
                                            0.5).numpy()])
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])


@pytest.mark.parametrize("code", [
    "m.bernoulli(m.tensor([0, 1]))", "m.bernoulli(m.tensor([True]))",
    "m.bernoulli(m.tensor([0.5, 1.5]))", "m.bernoulli(m.tensor([0.5, -0.5]))",
    "m.bernoulli(m.tensor([0.5, float('nan')]))", "m.bernoulli(0.5)",
    "m.bernoulli(m.tensor([0.5]), m.tensor([0.3]))", "m.bernoulli(m.tensor([0.5]), 1.5)",
    "m.empty(2).bernoulli_(1.5)", "m.empty(2).bernoulli_(-0.1)",
    "m.empty(2).bernoulli_(float('nan'))", "m.empty(2).bernoulli_(m.tensor([0.5, 1.5]))",
    "m.empty(2).bernoulli_(m.tensor([0.5, 0.5, 0.5]))",
    "m.empty(2).bernoulli_(m.tensor([[0.5], [0.5]]))", "m.empty(2).bernoulli_(m.tensor([1, 0]))",
    "m.ones(2, requires_grad=True).bernoulli_()",
])
def test_bernoulli_errors(code):
    assert_same_error(code)


# ----------------------------------------------------------------------------------- normal


NORMAL_CALLS = [
    "m.normal(M, S)", "m.normal(M, 2.0)", "m.normal(0.5, S)", "m.normal(M)",
    "m.normal(mean=M, std=S)", "m.normal(std=S, mean=M)", "m.normal(mean=0.5, std=S)",
    "m.normal(M, S.detach().double())", "m.normal(M.reshape(1, -1), S.detach().reshape(-1, 1))",
    "m.normal(M, m.tensor(1.5))", "m.normal(M.detach(), S.detach().round().long())",
    "m.normal(1., 2., (n,))", "m.normal(1., 2., size=(2, n), dtype=m.float64)",
    "m.normal(0, 1, [n])", "m.normal(M, S, generator=m.Generator().manual_seed(2))",
]


# PyTorch's x86 builds compute a float32 normal fill with float32 Cephes polynomials that
# numgrad replays bit for bit (numgrad/kernels/cpu/_boxmuller32.py); other builds may differ
# in the last bits
EXACT32 = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


@pytest.mark.parametrize("n", [4096 + 21, 100_003])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_normal_and_uniform_fills_match_pytorch(dtype, n):
    """The fused fills (draws and transform in one pass, chunk by chunk): whole blocks of 16,
    the redrawn tail, a uniform fill after them, and the generator state they leave."""
    res = []
    for m in (ng, torch):
        g = m.Generator().manual_seed(n)
        t = m.empty(n, dtype=getattr(m, dtype))
        a = t.normal_(0.3, 0.02, generator=g).numpy().copy()
        b = t.uniform_(-0.5, 0.25, generator=g).numpy().copy()
        res.append((a, b, g.get_state().numpy()))
    (a, b, s), (a2, b2, s2) = res
    if dtype == "float32" and not EXACT32:
        np.testing.assert_allclose(a, a2, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    np.testing.assert_array_equal(s, s2)


@pytest.mark.parametrize("n", [3, 16, 21])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("code", NORMAL_CALLS)
def test_normal_with_tensors_matches_pytorch(code, dtype, n):
    rng = np.random.default_rng(n)
    mean, std = rng.random(n) - 0.5, rng.random(n) + 0.5
    res = []
    for m in (ng, torch):
        d = getattr(m, dtype)
        M = m.tensor(mean, dtype=d, requires_grad=True)
        S = m.tensor(std, dtype=d, requires_grad=True)
        m.manual_seed(7)
        r = eval(code, {"m": m, "M": M, "S": S, "n": n})
        name = type(r.grad_fn).__name__ if r.grad_fn is not None else None
        if r.requires_grad:
            r.sum().backward()
        res.append((r.detach().numpy(), name, M.grad, S.grad, m.rand(2, dtype=m.float64).numpy()))
    (a, na, ma, sa, aa), (b, nb, mb, sb, ab) = res
    assert a.dtype == b.dtype and a.shape == b.shape and na == nb
    if a.dtype == np.float32 and a.size >= 16 and not EXACT32:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(a, b)
    for ours, theirs in ((ma, mb), (sa, sb)):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # zeros
    np.testing.assert_array_equal(aa, ab)


def test_normal_out():
    res = []
    for m in (ng, torch):
        m.manual_seed(1)
        out = m.empty(4)
        r = m.normal(m.zeros(4), 2.0, out=out)
        out2 = m.empty(3, dtype=m.float64)
        m.normal(0., 1., (3,), out=out2)
        res.append((r is out, out.numpy(), out2.numpy()))
    assert res[0][0] and res[1][0]
    np.testing.assert_array_equal(res[0][1], res[1][1])
    np.testing.assert_array_equal(res[0][2], res[1][2])


@pytest.mark.parametrize("code", [
    "m.normal(1.0, 2.0)", "m.normal(M, S, (2,))", "m.normal(M, 1, (3,))", "m.normal(1, 2, 3)",
    "m.normal(std=S)", "m.normal(M, 1., dtype=m.float64)", "m.normal(m.tensor([1, 2]), 1.)",
    "m.normal(m.tensor([True]), 1.)", "m.normal(1., m.tensor([1, 2]))",
    "m.normal(m.tensor([1., 2]), -1.)", "m.normal(m.tensor([1., 2]), float('nan'))",
    "m.normal(m.tensor([1., 2]), m.tensor([1., -1]))", "m.normal(1., m.tensor([1., -1]))",
    "m.normal(m.tensor([1., 2]), m.tensor([1., float('nan')]))",
    "m.normal(m.tensor([1., 2]), m.tensor([1., 2, 3]))", "m.normal(0., -1., (2,))",
    "m.normal(0., 1., (2,), dtype=m.int64)", "m.normal(0., 1., 2)",
    "m.normal(M.requires_grad_(), 1., out=m.empty(3))",
])
def test_normal_errors(code):
    assert_same_error(code, M=np.zeros(3, np.float32), S=np.ones(3, np.float32))


# ------------------------------------------------------------------------------ spellings


@pytest.mark.parametrize("code", [
    "m.randn(size=(2, 3))", "m.randn(size=[2])", "m.randn(size=())",
    "m.randn(size=(2,), dtype=m.float64)", "m.rand(size=(2, 3))",
    "m.rand(size=(2, 3), generator=m.Generator().manual_seed(3))",
    "m.randint(5, (3,))", "m.randint(2, 5, (3,))", "m.randint(5, size=(3,))",
    "m.randint(2, 5, size=(3,))", "m.randint(high=5, size=(3,))",
    "m.randint(low=2, high=5, size=(3,))", "m.randint(5, [3, 2])", "m.randint(5, m.Size([3]))",
    "m.randint(3, 5, (3,), dtype=m.uint8)", "m.randint(m.tensor(5), (3,))",
    "m.randint(2, 5, (3,), generator=m.Generator().manual_seed(5))",
    "m.randint(0, 2, (5,), dtype=m.bool)", "m.randint(2**40, (3,))",
])
def test_random_factory_spellings(code):
    assert_same(code, 4)


@pytest.mark.parametrize("code", [
    "m.zeros(size=(2, 3))", "m.ones(size=(2, 3))", "m.empty(size=(2, 3)).shape",
    "m.zeros(size=(2, 3), dtype=m.int64)", "m.full(size=(2, 3), fill_value=1.5)",
    "m.full((2,), fill_value=True)", "m.zeros(size=(2,), out=None)",
])
def test_factory_size_keyword(code):
    ours, theirs = (eval(code, {"m": m}) for m in (ng, torch))
    if hasattr(theirs, "numpy"):
        ours, theirs = ours.numpy(), theirs.numpy()
        assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("code", [
    "m.randn(2, size=(3,))", "m.randn()", "m.randn(size=2)", "m.randn(size=None)",
    "m.randn(2.5)", "m.randn((2,), (3,))", "m.rand(2, 3, size=(2, 3))",
    "m.ones(2, size=(3,))", "m.zeros(2, size=(3,))",
    "m.rand(2, dtype=m.int64)", "m.randn(2, dtype=m.int64)",
    "m.randint(5)", "m.randint(5, 3)", "m.randint(2, 5)", "m.randint(size=(3,))",
    "m.randint(low=2, size=(3,))", "m.randint(low=2, high=5, size=3)", "m.randint(5.5, (3,))",
    "m.randint(2, 5, 3)", "m.randint(1, 2, 3, 4)", "m.randint(-3, (3,))",
    "m.randint(3, (2,), foo=1)",
    "m.randint(0, 0, (3,))", "m.randint(5, 2, (3,))", "m.randint(5, (-1,))",
    "m.randint(5, (3,), dtype=m.bool)", "m.randint(-1, 5, (3,), dtype=m.uint8)",
    "m.randint(0, 300, (3,), dtype=m.uint8)", "m.randint(0, 2**40, (3,), dtype=m.int32)",
    "m.randint(5, size=(3,), requires_grad=True)", "m.randint(True, (3,))",
    "m.randint(2**63, (3,))", "m.randint(5, (2.5,))", "m.randint(5, (3,), size=(3,))",
    "m.zeros()", "m.empty()", "m.rand()", "m.zeros(2.5)", "m.zeros((2,), (3,))",
    "m.zeros(size=2)", "m.zeros(size=None)",
])
def test_factory_spelling_errors(code):
    assert_same_error(code)
