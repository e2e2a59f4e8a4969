"""``norm(x, p='nuc')``: values, gradients, graph node names and errors against PyTorch; the
gradient also against float64 finite differences; the Jacobi SVD kernel's factors."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, finite_difference, requires_torch, to_numpy, torch
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng

pytestmark = requires_torch

SHAPES = [  # (shape, dim)
    ((4, 4), None), ((6, 3), None), ((3, 6), (-2, -1)), ((1, 1), None), ((1, 5), None),
    ((2, 3, 5), (-2, -1)), ((2, 3, 5), (0, 2)), ((2, 3, 5), (2, 0)), ((3, 2, 2, 4), (1, 3)),
]


def _chain(fn):
    names = []
    while fn is not None:
        names.append(type(fn).__name__)
        nxt = [n for n, _ in fn.next_functions if n is not None]
        fn = nxt[0] if nxt else None
    return names


def _both(a, dim, keepdim, requires_grad=True):
    x, t = ng.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)
    kw = {"p": "nuc", "keepdim": keepdim}
    if dim is not None:
        kw["dim"] = dim
    return x, t, ng.norm(x, **kw), torch.norm(t, **kw)


@pytest.mark.parametrize("shape,dim", SHAPES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_gradients_and_graph(shape, dim, keepdim, dtype):
    a = np.random.default_rng(len(shape) * 7 + sum(shape)).standard_normal(shape).astype(dtype)
    x, t, y, yt = _both(a, dim, keepdim)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-11, "atol": 1e-11}
    assert y.dtype == ng.float32 if dtype == np.float32 else y.dtype == ng.float64
    assert_close(y, yt, **tol)
    w = np.random.default_rng(1).standard_normal(tuple(yt.shape)).astype(dtype)
    (y * ng.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    assert x.grad.dtype == x.dtype
    assert_close(x.grad, t.grad, rtol=tol["rtol"] * 100, atol=tol["atol"] * 100)
    assert _chain(y.grad_fn) == _chain(yt.grad_fn)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__


@pytest.mark.parametrize("shape,dim", SHAPES[:7])
def test_gradient_finite_differences(shape, dim):
    a = np.random.default_rng(3).standard_normal(shape)
    x, _, y, _ = _both(a, dim, False)
    w = np.random.default_rng(4).standard_normal(tuple(y.shape))
    (y * ng.tensor(w)).sum().backward()

    def f(arr):
        kw = {} if dim is None else {"dim": dim}
        return to_numpy(ng.norm(ng.tensor(arr), p="nuc", **kw))
    assert_close(x.grad, finite_difference(f, [a], 0, w), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("a", [
    np.zeros((3, 3)), np.zeros((3, 2)), np.zeros((2, 3)), np.zeros((1, 1)),
    np.array([[1.0, 2.0], [2.0, 4.0]]),  # rank 1, symmetric positive semidefinite
    np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]),
    np.array([[-2.0]]),
], ids=["zero3x3", "zero3x2", "zero2x3", "zero1x1", "rank1psd", "diag_rank2", "neg1x1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rank_deficient_as_pytorch(a, dtype):
    """The thin SVD's U V^T, as PyTorch, where that is well defined enough to agree."""
    x, t, y, yt = _both(a.astype(dtype), None, False)
    assert_close(y, yt, rtol=1e-6, atol=1e-6)
    y.backward()
    yt.backward()
    assert_close(x.grad, t.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,dim", [((0, 3), None), ((3, 0), None), ((0, 0), None),
                                       ((2, 0, 3), (-2, -1)), ((0, 2, 3), (1, 2)),
                                       ((2, 0, 3), (0, 2))])
@pytest.mark.parametrize("keepdim", [False, True])
def test_empty(shape, dim, keepdim):
    x, t, y, yt = _both(np.zeros(shape), dim, keepdim)
    assert_close(y, yt)
    y.sum().backward()
    yt.sum().backward()
    assert_close(x.grad, t.grad)


def _error(fn, *args, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - compared between the libraries
        return isinstance(e, RuntimeError), type(e).__name__.lstrip("_"), str(e)
    return None


@pytest.mark.parametrize("make,kw", [
    (lambda m: m.randn(3), {}),
    (lambda m: m.ones(3, 3, dtype=m.int64), {}),
    (lambda m: m.ones(3, 3, dtype=m.float16), {}),
    (lambda m: m.randn(2, 3, 4), {}),
    (lambda m: m.randn(2, 3, 4), {"dim": (0, 0)}),
    (lambda m: m.randn(2, 3, 4), {"dim": (1, -2)}),
    (lambda m: m.randn(2, 3, 4), {"dim": (0, 5)}),
    (lambda m: m.randn(2, 3, 4), {"dim": (0,)}),
    (lambda m: m.randn(2, 3, 4), {"dim": (0, 1, 2)}),
    (lambda m: m.randn(3, 3), {"dtype": "int64"}),
    (lambda m: m.randn(3, 3, dtype=m.float64), {"dtype": "float32"}),
    (lambda m: m.tensor([[float("nan"), 1.0], [2.0, 3.0]]), {}),
])
def test_errors_as_pytorch(make, kw):
    def run(m):
        k = dict(kw)
        if "dtype" in k:
            k["dtype"] = getattr(m, k["dtype"])
        return _error(lambda: m.norm(make(m), p="nuc", **k))
    expected = run(torch)
    assert expected is not None
    assert run(ng) == expected


def test_dtype_argument():
    a = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    x, t = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yt = ng.norm(x, p="nuc", dtype=ng.float64), torch.norm(t, p="nuc", dtype=torch.float64)
    assert y.dtype == ng.float64
    assert_close(y, yt, rtol=1e-12, atol=1e-12)
    y.backward()
    yt.backward()
    assert x.grad.dtype == ng.float32
    assert_close(x.grad, t.grad)


def test_svd_kernel_factors():
    from numgrad.kernels.cpu.svd import svd_batch
    rng = np.random.default_rng(6)
    for shape in [(3, 5, 4), (2, 4, 7), (1, 8, 8), (2, 6, 1)]:
        a = rng.standard_normal(shape)
        u, s, v = svd_batch(a)
        k = min(shape[1:])
        assert np.all(np.diff(s, axis=1) <= 0)
        np.testing.assert_allclose(np.einsum("bik,bk,bjk->bij", u, s, v), a, atol=1e-13)
        eye = np.broadcast_to(np.eye(k), (shape[0], k, k))
        np.testing.assert_allclose(np.swapaxes(u, 1, 2) @ u, eye, atol=1e-13)
        np.testing.assert_allclose(np.swapaxes(v, 1, 2) @ v, eye, atol=1e-13)


def test_second_derivative_refused():
    """Not implemented (PyTorch differentiates the SVD again): an error, never a wrong value."""
    x = ng.tensor(np.random.default_rng(8).standard_normal((3, 3)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="LinalgSvdBackward0"):
        ng.autograd.grad(ng.norm(x, p="nuc"), x, create_graph=True)


def test_huge_and_tiny_scales():
    for scale in (1e-200, 1e200):
        a = np.random.default_rng(7).standard_normal((4, 3)) * scale
        assert_close(ng.norm(ng.tensor(a), p="nuc"), torch.norm(torch.tensor(a), p="nuc"),
                     rtol=1e-12, atol=0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 8), st.integers(1, 8), st.integers(0, 2 ** 31 - 1),
       st.sampled_from([np.float32, np.float64]), st.booleans())
def test_values_match_pytorch_random_shapes(batch, m, n, seed, dtype, low_rank):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, m, n))
    if low_rank:
        r = max(1, min(m, n) // 2)
        a = rng.standard_normal((batch, m, r)) @ rng.standard_normal((batch, r, n))
    a = a.astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-11
    assert_close(ng.norm(ng.tensor(a), p="nuc", dim=(-2, -1)),
                 torch.norm(torch.tensor(a), p="nuc", dim=(-2, -1)), rtol=tol, atol=tol)
