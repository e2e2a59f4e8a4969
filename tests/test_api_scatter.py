"""scatter / scatter_ (src or value, the deprecated ``reduce=``), scatter_add_, scatter_reduce
(all five reductions, include_self) against PyTorch: values, node names, gradients (ties of
amax/amin, zeros in prod), gradcheck on float64, and PyTorch's errors."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, raised
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng

torch = pytest.importorskip("torch")

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def _pair(a, requires_grad=False):
    return (ng.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _inputs(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, (3, 4)).astype(dtype)  # small integers: ties and zeros
    src = rng.integers(-3, 4, (2, 4)).astype(dtype)
    idx = np.array([[0, 1, 2, 0], [0, 1, 0, 0]])
    return x, src, idx


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values_and_grads_match_torch(reduce, include_self):
    x, src, idx = _inputs(1)
    src[0, 0] = 0.0  # one zero in a prod group, and ties for amax/amin
    src[1, 0] = x[0, 0]
    nx, tx = _pair(x, True)
    ns, ts = _pair(src, True)
    ni, ti = _pair(idx)
    nr = nx.scatter_reduce(0, ni, ns, reduce, include_self=include_self)
    tr = tx.scatter_reduce(0, ti, ts, reduce, include_self=include_self)
    assert type(nr.grad_fn).__name__ == type(tr.grad_fn).__name__ == "ScatterReduceBackward0"
    assert_close(nr, tr.detach())
    w = np.arange(12.0).reshape(3, 4) - 5
    (nr * ng.tensor(w)).sum().backward()
    (tr * torch.tensor(w)).sum().backward()
    assert_close(nx.grad, tx.grad)
    assert_close(ns.grad, ts.grad)


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "prod"])
def test_scatter_reduce_gradcheck(reduce):
    rng = np.random.default_rng(2)
    x = ng.tensor(rng.uniform(0.5, 2, (3, 2)), requires_grad=True)
    s = ng.tensor(rng.uniform(0.5, 2, (4, 2)), requires_grad=True)
    i = ng.tensor([[0, 1], [2, 1], [0, 0], [1, 2]])
    for inc in (True, False):
        assert ng.autograd.gradcheck(
            lambda a, b, inc=inc: a.scatter_reduce(0, i, b, reduce, include_self=inc),
            (x, s))


def test_scatter_src_value_and_inplace_match_torch():
    x, _, _ = _inputs(3)
    src = np.arange(8.0).reshape(2, 4)
    idx = np.array([[2, 0, 1, 2], [1, 2, 0, 0]])  # no repeats per column: a defined result
    nx, tx = _pair(x, True)
    ns, ts = _pair(src, True)
    ni, ti = _pair(idx)
    for nr, tr in ((nx.scatter(0, ni, ns), tx.scatter(0, ti, ts)),
                   (ng.scatter(nx, 1, ni, src=ns), torch.scatter(tx, 1, ti, src=ts)),
                   (nx.scatter(0, ni, 2.5), tx.scatter(0, ti, 2.5)),
                   (nx.scatter(-1, ni, value=-1), tx.scatter(-1, ti, value=-1))):
        assert type(nr.grad_fn).__name__ == type(tr.grad_fn).__name__
        assert_close(nr, tr.detach())
        w = np.linspace(-1, 1, 12).reshape(3, 4)
        nx.grad = ns.grad = None
        tx.grad = ts.grad = None
        (nr * ng.tensor(w)).sum().backward()
        (tr * torch.tensor(w)).sum().backward()
        assert_close(nx.grad, tx.grad)
        if ts.grad is not None:
            assert_close(ns.grad, ts.grad)
    assert ng.autograd.gradcheck(lambda a, b: a.scatter(0, ni, b), (nx, ns))
    # in place, through a non-leaf: the node is the op's, the leaf gets the gradient
    ny, ty = nx * 1, tx * 1
    ny.scatter_(0, ni, ns)
    ty.scatter_(0, ti, ts)
    assert type(ny.grad_fn).__name__ == type(ty.grad_fn).__name__ == "ScatterBackward0"
    assert_close(ny, ty.detach())
    a, b = ng.zeros(3, 4, dtype=ng.int64), torch.zeros(3, 4, dtype=torch.int64)
    a.scatter_add_(0, ni, ng.ones(2, 4, dtype=ng.int64))
    b.scatter_add_(0, ti, torch.ones(2, 4, dtype=torch.int64))
    a.scatter_reduce_(0, ni, ng.full((2, 4), 7), "amax", include_self=False)
    b.scatter_reduce_(0, ti, torch.full((2, 4), 7), "amax", include_self=False)
    assert (a.numpy() == b.numpy()).all()


def test_scatter_deprecated_reduce_matches_torch():
    x, src, idx = _inputs(4)
    nx, tx = _pair(x, True)
    ns, ts = _pair(src)
    ni, ti = _pair(idx)
    from numgrad.ops import scatter as sc
    sc._WARNED[0] = False
    for reduce in ("add", "multiply"):
        with warnings.catch_warnings(record=True) as nw:
            warnings.simplefilter("always")
            nr = nx.scatter(0, ni, ns, reduce=reduce)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tr = tx.scatter(0, ti, ts, reduce=reduce)
        # PyTorch warns once per process
        assert [str(w.message) for w in nw] == ([sc.DEPRECATED] if reduce == "add" else [])
        assert_close(nr, tr.detach())
        assert type(nr.grad_fn).__name__ == type(tr.grad_fn).__name__ == "NotImplemented"
        assert raised(nr.sum().backward) == raised(tr.sum().backward)
        with warnings.catch_warnings(record=True) as nw:
            warnings.simplefilter("always")
            assert_close(nx.scatter(0, ni, 3.0, reduce=reduce),
                         tx.scatter(0, ti, 3.0, reduce=reduce).detach())
        assert not nw  # the number form is not deprecated


def test_scatter_reduce_integer_mean_and_nan():
    a = ng.tensor([-5, 3]).scatter_reduce(0, ng.tensor([0, 0]), ng.tensor([0, 0]), "mean")
    b = torch.tensor([-5, 3]).scatter_reduce(0, torch.tensor([0, 0]), torch.tensor([0, 0]),
                                             "mean")
    assert a.tolist() == b.tolist()
    v = [1.0, float("nan"), 3.0]
    for reduce, inc in (("amax", True), ("amin", False)):
        a = ng.zeros(2).scatter_reduce(0, ng.tensor([0, 0, 1]), ng.tensor(v), reduce,
                                       include_self=inc)
        b = torch.zeros(2).scatter_reduce(0, torch.tensor([0, 0, 1]), torch.tensor(v), reduce,
                                          include_self=inc)
        assert_close(a, b)


ERRORS = [
    lambda L, x, i, s: x.scatter(0, L.tensor([[5, 0, 0, 0]]), s),
    lambda L, x, i, s: x.scatter(0, L.tensor([[-1, 0, 0, 0]]), s),
    lambda L, x, i, s: x.scatter(0, i.float(), s),
    lambda L, x, i, s: x.scatter(0, i, s.double()),
    lambda L, x, i, s: x.scatter(0, i[0], s),
    lambda L, x, i, s: x.scatter(0, L.tensor([[0] * 5]), s),
    lambda L, x, i, s: x.scatter(2, i, s),
    lambda L, x, i, s: x.scatter(0, i, s, reduce="mean"),
    lambda L, x, i, s: x.scatter(0, i, 1.0, reduce="foo"),
    lambda L, x, i, s: x.scatter(0, i, 2.0, reduce=None),
    lambda L, x, i, s: x.scatter(0, L.tensor([[7]]), 1.0),
    lambda L, x, i, s: x.scatter_reduce(0, i, s.double(), "sum"),
    lambda L, x, i, s: x.scatter_reduce(0, i[0], s, "sum"),
    lambda L, x, i, s: x.scatter_reduce(0, L.tensor([[9, 0, 0, 0]]), s, "sum"),
    lambda L, x, i, s: x.scatter_reduce(0, i, 2.0, "sum"),
    lambda L, x, i, s: x.scatter_reduce(0, i, s, "median"),
    lambda L, x, i, s: x.scatter_(0, i, s),
    lambda L, x, i, s: L.zeros(3).scatter(0, L.tensor([1]), L.tensor([True, False])),
    lambda L, x, i, s: L.zeros(3, dtype=L.int64).scatter_reduce(
        0, L.tensor([0, 1]), L.tensor([1.0, 2.0]), "sum"),
    lambda L, x, i, s: x.scatter(0, i, s).sum().backward(),
    lambda L, x, i, s: L.zeros(3, dtype=L.bool).scatter_reduce(
        0, L.tensor([1]), L.ones(1, dtype=L.bool), "mean"),
]


def test_scatter_reduce_bool_matches_torch():
    for reduce in ("sum", "prod", "amax", "amin"):
        for inc in (True, False):
            a = ng.zeros(3, dtype=ng.bool).scatter_reduce(
                0, ng.tensor([1, 1]), ng.ones(2, dtype=ng.bool), reduce, include_self=inc)
            b = torch.zeros(3, dtype=torch.bool).scatter_reduce(
                0, torch.tensor([1, 1]), torch.ones(2, dtype=torch.bool), reduce,
                include_self=inc)
            assert a.tolist() == b.tolist()


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_scatter_errors_match_torch(k):
    x, src, idx = _inputs(5, np.float32)
    got = []
    for L in (ng, torch):
        got.append(raised(ERRORS[k], L, L.tensor(x, requires_grad=True), L.tensor(idx),
                          L.tensor(np.vstack([src, src[:1]]), requires_grad=True)))
    n, t = got
    assert t is not None
    if "invalid combination" in t[1]:
        assert n[0] == t[0] and n[1].split(":")[0] == t[1].split(":")[0]
    else:
        assert n == t


def test_scatter_edges():
    # 0-dim self, src and index; an empty index; a non-contiguous self
    assert ng.zeros(()).scatter(0, ng.tensor(0), ng.tensor(2.0)).item() == 2.0
    assert ng.zeros(3).scatter(0, ng.tensor(1), ng.tensor(2.0)).tolist() == [0, 2, 0]
    e = ng.zeros(2, 2).scatter_reduce(0, ng.zeros(0, 2, dtype=ng.int64), ng.ones(2, 2), "amax")
    assert e.tolist() == [[0, 0], [0, 0]]
    x = np.arange(20.0).reshape(4, 5)
    idx = np.array([[1, 0], [0, 2]])
    src = -np.ones((2, 2))
    a = ng.tensor(x).t().scatter_reduce(1, ng.tensor(idx), ng.tensor(src), "prod")
    b = torch.tensor(x).t().scatter_reduce(1, torch.tensor(idx), torch.tensor(src), "prod")
    assert_close(a, b)


@st.composite
def _scatter_case(draw):
    nd = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 4), min_size=nd, max_size=nd))
    dim = draw(st.integers(-nd, nd - 1))
    ishape = [draw(st.integers(0 if k == 0 else 1, shape[k] if k != dim % nd else 5))
              for k in range(nd)]
    seed = draw(st.integers(0, 2**16))
    return shape, dim, ishape, seed, draw(st.sampled_from(REDUCES)), draw(st.booleans())


@settings(max_examples=20, deadline=None)
@given(_scatter_case())
def test_scatter_reduce_matches_torch_on_random_shapes(case):
    shape, dim, ishape, seed, reduce, inc = case
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float64)
    src = rng.integers(-2, 3, ishape).astype(np.float64)
    idx = rng.integers(0, shape[dim], ishape)
    got = []
    for L in (ng, torch):
        a, s = L.tensor(x, requires_grad=True), L.tensor(src, requires_grad=True)
        r = a.scatter_reduce(dim, L.tensor(idx), s, reduce, include_self=inc)
        (r * L.tensor(np.arange(r.numel(), dtype=np.float64).reshape(shape))).sum().backward()
        got.append((r.detach(), a.grad, s.grad))
    for n, t in zip(*got):
        assert_close(n, t)


def test_scatter_under_compile_matches_eager():
    i = ng.tensor([[0, 1, 2, 0], [0, 1, 0, 0]])

    def f(x, s):
        return x.scatter_reduce(0, i, s, "mean", include_self=False) + x.scatter(0, i, 2.0)

    cf = ng.compile(f)
    rng = np.random.default_rng(7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn
        for _ in range(3):
            x, s = ng.tensor(rng.standard_normal((3, 4))), ng.tensor(rng.standard_normal((2, 4)))
            assert_close(cf(x, s), f(x, s))
