"""Reductions, softmax and matrix products on odd input behave like PyTorch: the same
exception class and message, or the same values, dtypes and gradients.

Each error case names the class numgrad must raise (so the test means something without
PyTorch); with PyTorch installed the message must match too.
"""

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng

F = "float32"


def _t(L, shape, dtype=F, fill=1, requires_grad=False):
    x = L.full(shape, fill, dtype=getattr(L, dtype))
    return x.requires_grad_() if requires_grad else x


ERRORS = [
    # dims are range-checked before duplicates in sum/mean/amax/logsumexp
    ("sum dims range before duplicates", IndexError, lambda L: _t(L, ()).sum((0, 0, 1))),
    ("mean dims range before duplicates", IndexError,
     lambda L: L.mean(_t(L, (2, 3)), (0, 0, 5))),
    ("sum duplicate dims", RuntimeError, lambda L: _t(L, ()).sum((0, -1))),
    ("amax empty dim before duplicates", IndexError, lambda L: L.amax(_t(L, (0, 2)), (1, 1, 0))),
    ("amax of everything of an empty tensor", RuntimeError, lambda L: L.amax(_t(L, (0, 2)))),
    # vector norms check duplicates in order, and refuse inf/negative norms of nothing
    ("vector norm duplicates in order", RuntimeError, lambda L: L.norm(_t(L, ()), 1, (0, 0, 1))),
    ("inf norm of an empty tensor", RuntimeError, lambda L: _t(L, (2, 0)).norm(float("inf"))),
    ("-1 norm over an empty dim", RuntimeError, lambda L: L.norm(_t(L, (2, 0)), -1, (0, -1))),
    # norm's ord is a number and its dim ints: a bool dim is not taken as dim 1
    ("norm of a bool dim", TypeError, lambda L: _t(L, (3, 4)).norm(2, True)),
    ("fro norm of a bool dim", TypeError, lambda L: L.norm(_t(L, (3, 4)), "fro", True)),
    ("norm of a float dim", TypeError, lambda L: _t(L, (3, 4)).norm(2, 1.5)),
    ("norm of a float in a dim list", TypeError, lambda L: _t(L, (3, 4)).norm(2, (0, 1.5))),
    ("norm of a list ord", TypeError, lambda L: _t(L, (3, 4)).norm(p=[1, 2])),
    # torch.norm's Frobenius norm over more than two dims is a matrix norm
    ("fro norm over three dims", RuntimeError, lambda L: _t(L, (2, 3, 4)).norm(dim=(0, 2, 0))),
    ("fro norm of a vector over three dims", RuntimeError,
     lambda L: _t(L, (3,)).norm(dim=(0, 0, 0))),
    ("unknown matrix norm", RuntimeError, lambda L: L.norm(_t(L, (2, 3)), "abc", (0, 1))),
    ("matrix norm of ints", RuntimeError,
     lambda L: L.norm(_t(L, (2, 3), "int64"), "fro", [0, 1, 0])),
    # arg-reductions and softmax have no bool/integer kernels
    ("argmax of bool", RuntimeError, lambda L: _t(L, (3,), "bool").argmax()),
    ("argmin of bool", RuntimeError, lambda L: L.argmin(_t(L, (2, 3), "bool"), 1)),
    ("softmax of ints", NotImplementedError, lambda L: L.softmax(_t(L, (2, 3), "int64"), 0)),
    ("softmax of ints, last dim", NotImplementedError,
     lambda L: L.softmax(_t(L, (2, 3), "int64"), -1)),
    ("log_softmax of bool", NotImplementedError,
     lambda L: L.log_softmax(_t(L, (), "bool"), 0)),
    ("softmax to an integer dtype", NotImplementedError,
     lambda L: L.softmax(_t(L, (2, 3)), 1, dtype=L.int64)),
    ("logsumexp over [] without keepdim", RuntimeError, lambda L: L.logsumexp(_t(L, (2, 3)), ())),
    ("logsumexp without dim", TypeError, lambda L: L.logsumexp(_t(L, (2, 3)), None)),
    # matrix products: no bool kernels once there is something to sum
    ("mm of bool", NotImplementedError,
     lambda L: L.mm(_t(L, (2, 2), "bool"), _t(L, (2, 3), "bool"))),
    ("mv of bool", NotImplementedError, lambda L: L.mv(_t(L, (2, 2), "bool"), _t(L, (2,), "bool"))),
    ("dot of empty bool", NotImplementedError,
     lambda L: L.dot(_t(L, (0,), "bool"), _t(L, (0,), "bool"))),
    ("bmm of bool", NotImplementedError,
     lambda L: L.bmm(_t(L, (1, 2, 2), "bool"), _t(L, (1, 2, 3), "bool"))),
    ("bmm of bool and float", NotImplementedError,
     lambda L: L.bmm(_t(L, (1, 2, 2), "bool"), _t(L, (1, 2, 3)))),
    ("bmm of long and float", RuntimeError,
     lambda L: L.bmm(_t(L, (1, 2, 2), "int64"), _t(L, (1, 2, 3)))),
    ("mv of long and float", RuntimeError,
     lambda L: L.mv(_t(L, (2, 2), "int64"), _t(L, (2,)))),
    ("dot checks dtypes before sizes", RuntimeError,
     lambda L: L.dot(_t(L, (2,), "bool"), _t(L, (3,)))),
    ("mm of long and float, empty", RuntimeError,
     lambda L: L.mm(_t(L, (0, 2), "int64"), _t(L, (2, 3)))),
    ("matmul folds 3-D @ 2-D: dtypes checked", RuntimeError,
     lambda L: _t(L, (0, 3, 1), "int64") @ _t(L, (1, 4))),
    ("matmul folds 1-D @ 3-D into an mv", RuntimeError,
     lambda L: _t(L, (3,), "int64") @ _t(L, (0, 3, 1))),
    ("matmul folds when the small operand needs grad", RuntimeError,
     lambda L: _t(L, (2, 3), requires_grad=True) @ _t(L, (0, 3, 4), "float64")),
    ("empty bmm to long with a grad", RuntimeError,
     lambda L: L.bmm(_t(L, (0, 1, 1), requires_grad=True), _t(L, (0, 1, 1), "int64"))),
]


@pytest.mark.parametrize("name,cls,fn", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(name, cls, fn):
    with pytest.raises(cls) as got:
        fn(ng)
    if torch is not None:
        with pytest.raises(Exception) as want:
            fn(torch)
        assert isinstance(want.value, cls)
        assert str(got.value) == str(want.value)


def _same(a, b):
    g, w = a.detach().numpy(), b.detach().numpy()
    assert (g.dtype, g.shape) == (w.dtype, w.shape)
    assert a.requires_grad == b.requires_grad
    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True)


def _both(fn, *arrays, grads=True):
    """Run ``fn`` on leaves made from ``arrays`` under both libraries; compare the results
    and (for float leaves) the gradients of ``result.sum()``."""
    outs = []
    for L in (ng, torch):
        leaves = [L.tensor(a, requires_grad=grads and a.dtype.kind == "f") for a in arrays]
        out = fn(L, *leaves)
        if out.requires_grad:
            out.sum().backward()
        outs.append((out, leaves))
    (n, nl), (t, tl) = outs
    _same(n, t)
    for a, b in zip(nl, tl):
        assert (a.grad is None) == (b.grad is None)
        if b.grad is not None:
            _same(a.grad, b.grad)
    return n


@requires_torch
def test_softmax_dtype_grad_comes_back_in_input_dtype():
    x = np.array([[0.3, -1.0, 2.0], [0.0, 0.5, 0.5]], np.float32)
    out = _both(lambda L, a: L.nn.functional.softmax(a, 1, dtype=L.float64), x)
    assert out.dtype == ng.float64
    _both(lambda L, a: L.log_softmax(a, 0, dtype=L.float64), x)


@requires_torch
def test_softmax_of_empty_ints_is_returned_as_is():
    out = _both(lambda L, a: L.softmax(a, 0), np.zeros((0, 3), np.int64))
    assert out.dtype == ng.int64


@requires_torch
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_empty_dim_list_reduces_everything(keepdim):
    _both(lambda L, a: L.logsumexp(a, (), keepdim=True), np.arange(6.0).reshape(2, 3))
    _both(lambda L, a: L.logsumexp(a, [], keepdim=keepdim), np.zeros((0, 2)))


@requires_torch
def test_max_of_all_shares_grad_among_nans():
    x = np.array([np.nan, -0.0, np.nan, 1.0], np.float32)
    _both(lambda L, a: a.max(), x)
    _both(lambda L, a: L.min(a), x)


@requires_torch
def test_amin_gradient_is_nan_where_the_min_is_nan():
    x = np.array([[0.3, -0.3, np.nan], [0.2, np.inf, 0.7], [-np.inf, 1.9, -1.4]], np.float32)
    _both(lambda L, a: a.amin(0), x)
    _both(lambda L, a: L.amax(a, 1, keepdim=True), x)


@requires_torch
def test_norm_over_empty_dims():
    _both(lambda L, a: a.norm(float("inf"), 1), np.zeros((0, 2), np.float32))
    _both(lambda L, a: L.norm(a, -1, 1), np.zeros((0, 2), np.float32))
    _both(lambda L, a: a.norm(dim=(0, 1)), np.ones((2, 3, 4), np.float32))


@requires_torch
def test_mixed_dtype_bmm_with_nothing_to_sum_gives_zeros_of_the_second_dtype():
    a, b = np.ones((1, 2, 0), np.int64), np.ones((1, 0, 3), np.float32)
    out = _both(lambda L, x, y: L.bmm(x, y), a, b)
    assert out.dtype == ng.float32
    _both(lambda L, x, y: L.bmm(x, y), np.ones((1, 2, 0), np.float32), np.ones((1, 0, 3)))
    _both(lambda L, x, y: x @ y, np.array([[4]]), np.ones((1, 1, 0), np.float32))
    _both(lambda L, x, y: x @ y, np.ones((3, 1), np.int64), np.ones((0, 1, 4), np.float32))


@requires_torch
def test_empty_bool_products_are_zeros():
    _both(lambda L, x, y: L.mm(x, y), np.ones((2, 0), bool), np.ones((0, 3), bool))
    _both(lambda L, x, y: L.mv(x, y), np.ones((0, 2), bool), np.ones(2, bool))
    _both(lambda L, x, y: x @ y, np.ones((2, 1, 0), bool), np.ones((0, 3), bool))


@requires_torch
def test_mean_over_split_dims_of_an_empty_tensor_is_nan():
    out = _both(lambda L, a: L.mean(a, (0, -1)), np.zeros((0, 1, 1), np.float32))
    assert np.isnan(out.detach().numpy()).all()
    _both(lambda L, a: a.mean((0, 2), keepdim=True), np.arange(24.0).reshape(2, 3, 4))
    _both(lambda L, a: a.sum((0, 2)), np.arange(24).reshape(2, 3, 4))


@requires_torch
@pytest.mark.parametrize("width", [1, 2, 7, 8, 9, 17, 1000])
def test_softmax_rows_with_special_values_match_pytorch(width):
    """Rows of every width around the row max's 8-wide stride, with nan, +-inf and both zeros
    at every kind of place (inside a stride, in the tail, first, last)."""
    rng = np.random.default_rng(width)
    x = rng.standard_normal((24, width)).astype(np.float32)
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 40.0]
    for r in range(1, 24):
        for _ in range(1 + r % 3):
            x[r, rng.integers(0, width)] = specials[(r + _) % len(specials)]
    x[0] = -0.0
    for name in ("softmax", "log_softmax"):
        want = getattr(torch, name)(torch.tensor(x), 1).numpy()
        got = getattr(ng, name)(ng.tensor(x), 1).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, equal_nan=True)
        assert np.array_equal(np.signbit(got[0]), np.signbit(want[0]))


@requires_torch
@pytest.mark.parametrize("shape,dim", [((3, 0), 1), ((0, 4), 1), ((2, 0, 3), 1), ((0,), 0)])
def test_softmax_of_empty_lines_matches_pytorch(shape, dim):
    """No line to read a first value from: an empty result and an empty gradient."""
    for name in ("softmax", "log_softmax"):
        x = ng.zeros(*shape, requires_grad=True)
        y = getattr(ng, name)(x, dim)
        y.sum().backward()
        want = getattr(torch, name)(torch.zeros(*shape), dim)
        assert tuple(y.shape) == tuple(want.shape) and tuple(x.grad.shape) == shape
