"""index_add / index_copy / index_fill (function, method, in place) against PyTorch: values,
node names, gradients (gradcheck on float64), dtype rules and PyTorch's errors."""

import numpy as np
import pytest
from conftest import assert_close, raised
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng

torch = pytest.importorskip("torch")


def _pair(a, requires_grad=False):
    return (ng.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _grads(fn, x, src):
    """fn's value and the gradients of sum(fn(...)^2) for (x, src) under both libraries."""
    out = []
    na, ta = _pair(x, True)
    nb, tb = _pair(src, True)
    for m, a, b in ((ng, na, nb), (torch, ta, tb)):
        r = fn(m, a, b)
        (r * r).sum().backward()
        out.append((r, type(r.grad_fn).__name__, a.grad, b.grad))
    return out


CASES = {
    "index_add": lambda m, a, b: a.index_add(1, m.tensor([3, 0, 3]), b, alpha=-2.0),
    "index_add_fn": lambda m, a, b: m.index_add(a, 1, m.tensor([3, 0, 3], dtype=m.int32), b),
    "index_add_": lambda m, a, b: (a * 1).index_add_(1, m.tensor([3, 0, 3]), b),
    "index_copy": lambda m, a, b: a.index_copy(1, m.tensor([3, 0, 1]), b),
    "index_copy_": lambda m, a, b: (a * 1).index_copy_(-1, m.tensor([3, 0, 1]), b),
    "index_fill_tensor": lambda m, a, b: a.index_fill(1, m.tensor([3, 0]), b.sum()),
    "index_fill_neg": lambda m, a, b: (a * b.sum()).index_fill(1, m.tensor([-1, -4]), 1.0),
    "index_fill_": lambda m, a, b: (a * b.sum()).index_fill_(0, m.tensor([1]), 2.5),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_nodes_and_grads_match_torch(name):
    rng = np.random.default_rng(0)
    x, src = rng.normal(size=(2, 4)), rng.normal(size=(2, 3))
    (nr, nn_, nga, ngb), (tr, tn, tga, tgb) = _grads(CASES[name], x, src)
    assert nn_ == tn
    assert_close(nr, tr.detach(), rtol=1e-12, atol=1e-12)
    assert_close(nga, tga, rtol=1e-12, atol=1e-12)
    assert_close(ngb, tgb, rtol=1e-12, atol=1e-12)


def test_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(1)
    a = ng.tensor(rng.normal(size=(3, 2)), requires_grad=True)
    b = ng.tensor(rng.normal(size=(2, 2)), requires_grad=True)
    v = ng.tensor(0.5, dtype=ng.float64, requires_grad=True)
    i = ng.tensor([2, 2])
    for f in (lambda a, b: a.index_add(0, i, b, alpha=1.5),
              lambda a, b: a.index_copy(0, ng.tensor([2, 0]), b * b),
              lambda a, b: a.index_fill(0, ng.tensor([2, 0]), v * b.sum())):
        assert ng.autograd.gradcheck(f, (a, b))
        assert ng.autograd.gradgradcheck(f, (a, b))


def test_scalars_empty_and_dtypes_match_torch():
    cases = [
        lambda m: m.tensor(1.5).index_add(0, m.tensor([0]), m.tensor(3.0)),
        lambda m: m.tensor(1.5).index_copy(0, m.tensor([0]), m.tensor(3.0)),
        lambda m: m.tensor(1.5).index_fill(0, m.tensor([0, 0]), 3.0),
        lambda m: m.zeros(0, 3).index_add(0, m.tensor([0]), m.ones(1, 3)),
        lambda m: m.zeros(2, 0).index_copy(0, m.tensor([5]), m.ones(1, 0)),
        lambda m: m.zeros(3, 2).index_add(0, m.tensor([], dtype=m.int64), m.ones(0, 2)),
        lambda m: m.zeros(3, dtype=m.int64).index_add(0, m.tensor([0, 0]),
                                                      m.tensor([2, 5]), alpha=1.5),
        lambda m: m.zeros(3, dtype=m.bool).index_add(0, m.tensor([0, 2]),
                                                     m.tensor([True, False]), alpha=2),
        lambda m: m.zeros(2, 3, dtype=m.int64).index_copy(1, m.tensor([2]),
                                                          m.full((2, 1), 7, dtype=m.int64)),
        lambda m: m.zeros(2, 3, dtype=m.int64).index_fill(1, m.tensor([1]), 2.5),
        lambda m: m.zeros(2, 3, dtype=m.int64).index_fill(1, m.tensor([1]), m.tensor(2.5)),
        lambda m: m.zeros(2, 3).index_fill(1, m.tensor(2), m.tensor(True)),
        lambda m: m.zeros(2, 3).index_fill(1, m.tensor([0]), True),
        lambda m: m.arange(12, dtype=m.float64).reshape(3, 4).t().index_add(
            0, m.tensor([0, 3]), m.ones(2, 3, dtype=m.float64)),
        lambda m: m.arange(12, dtype=m.float64).reshape(3, 4).t().index_fill(1, m.tensor([0]), -1),
    ]
    for case in cases:
        n, t = case(ng), case(torch)
        assert n.dtype.__repr__().split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(n.numpy(), t.numpy())


ERRORS = [
    lambda m: m.zeros(3, 4).index_add(0, m.tensor([0, 5]), m.ones(2, 4)),
    lambda m: m.zeros(3, 4).index_add(0, m.tensor([0, -1]), m.ones(2, 4)),
    lambda m: m.zeros(3, 4).index_add(0, m.tensor([0.0, 1.0]), m.ones(2, 4)),
    lambda m: m.zeros(3, 4).index_add(0, m.tensor([0, 2]), m.ones(2, 4, dtype=m.float64)),
    lambda m: m.zeros(3, 4).index_add(0, m.tensor([0, 2]), m.ones(3, 4)),
    lambda m: m.zeros(3, 4).index_add(0, m.tensor([0, 2]), m.ones(2, 5)),
    lambda m: m.zeros(3, 4).index_add(0, m.tensor([[0], [2]]), m.ones(2, 4)),
    lambda m: m.zeros(3, 4).index_add(2, m.tensor([0, 2]), m.ones(2, 4)),
    lambda m: m.zeros(3, 4, 5).index_add(2, m.tensor([0, 2]), m.ones(3, 4)),
    lambda m: m.zeros(3, 4, 5).index_add(0, m.tensor([1]), m.tensor(2.0)),
    lambda m: m.zeros(3, 4).index_add(0, [0, 1], m.ones(2, 4)),
    lambda m: m.zeros(3, 4).index_add(0, m.tensor([0, 1]), 2),
    lambda m: m.zeros(3, 4).index_copy(0, m.tensor([0, 5]), m.ones(2, 4)),
    lambda m: m.zeros(3, 4).index_copy(0, m.tensor([0, -1]), m.ones(2, 4)),
    lambda m: m.zeros(3, 4).index_copy(0, m.tensor([0, 2], dtype=m.int32), m.ones(2, 4)),
    lambda m: m.zeros(3, 4).index_copy(0, m.tensor([0, 2]), m.ones(2, 4, dtype=m.float64)),
    lambda m: m.zeros(3, 4).index_copy(0, m.tensor([0, 2]), m.ones(3, 4)),
    lambda m: m.zeros(3, 4, 5).index_copy(1, m.tensor([0, 2]), m.ones(2, 4, 6)),
    lambda m: m.zeros(3, 4, 5).index_copy(1, m.tensor([0, 2]), m.ones(3, 4)),
    lambda m: m.zeros(3, 4, 5).index_copy(1, m.tensor([0, 2]), m.tensor(1.0)),
    lambda m: m.zeros(3, 4).index_copy(0, m.tensor([[0, 1]]), m.ones(2, 4)),
    lambda m: m.tensor(1.0).index_copy(0, m.tensor([0, 0]), m.tensor(3.0)),
    lambda m: m.zeros(3, 4).index_fill(0, m.tensor([0, 5]), 1.0),
    lambda m: m.zeros(3, 4).index_fill(0, m.tensor([0, -4]), 1.0),
    lambda m: m.zeros(3, 4).index_fill(0, m.tensor([0, 2], dtype=m.int32), 1.0),
    lambda m: m.zeros(3, 4).index_fill(0, m.tensor([0, 2]), m.tensor([1.0])),
    lambda m: m.zeros(3, 4).index_fill(0, m.tensor([[0, 2]]), 1.0),
    lambda m: m.zeros(3, 4).index_fill(0, m.tensor([0, 2]), 1 + 2j),
    lambda m: m.zeros(3, 4).index_fill(3, m.tensor([0, 2]), 1.0),
    lambda m: m.tensor(1.0).index_fill(0, m.tensor([1]), 3.0),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    t = raised(ERRORS[i], torch)
    assert t is not None
    assert raised(ERRORS[i], ng) == t


def test_index_fill_bad_value_type():
    n = raised(lambda: ng.zeros(3).index_fill(0, ng.tensor([0]), "a"))
    assert n[0] == "TypeError" and n[1].startswith("index_fill() received an invalid "
                                                   "combination of arguments - got (int, "
                                                   "Tensor, str), but expected one of:")


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3), data=st.data())
def test_index_add_matches_torch_on_random_shapes(shape, data):
    d = data.draw(st.integers(0, len(shape) - 1))
    n = data.draw(st.integers(0, 4))
    idx = data.draw(st.lists(st.integers(0, shape[d] - 1), min_size=n, max_size=n))
    alpha = data.draw(st.sampled_from([1, -0.5, 2]))
    rng = np.random.default_rng(len(idx))
    sshape = list(shape)
    sshape[d] = n
    x, src = rng.normal(size=shape), rng.normal(size=sshape)
    ix, ti = ng.tensor(idx, dtype=ng.int64), torch.tensor(idx, dtype=torch.int64)
    nx, tx = _pair(x)
    ns, ts = _pair(src)
    assert_close(nx.index_add(d, ix, ns, alpha=alpha), tx.index_add(d, ti, ts, alpha=alpha),
                 rtol=1e-12, atol=1e-12)
    assert_close(nx.index_copy(d, ix, ns) if len(set(idx)) == n else nx,
                 tx.index_copy(d, ti, ts) if len(set(idx)) == n else tx)
    assert_close(nx.index_fill(d, ix, -1.0), tx.index_fill(d, ti, -1.0))


def test_compiled_replay_reads_the_current_index():
    """numgrad.compile replays the index ops (the index expansion is a recorded host step):
    an index computed inside the function changes from call to call, errors included."""
    import warnings

    def f(x, i):
        j = i * 1
        return x.index_add(0, j, x[:2], alpha=2), x.index_fill(0, j, 2.0), x.index_copy(
            0, j, x[:2] * 2)

    cf = ng.compile(f)
    x = ng.tensor(np.arange(6.0).reshape(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for i in ([0, 1], [1, 2], [2, 0], [0, 2], [3, 1], [1, 0]):
            idx = ng.tensor(i)
            expected = raised(f, x, idx)
            assert raised(cf, x, idx) == expected
            if expected is None:
                for a, b in zip(cf(x, idx), f(x, idx)):
                    np.testing.assert_array_equal(a.numpy(), b.numpy())
