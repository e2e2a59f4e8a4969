"""autograd.functional: return structures and values, against closed forms and PyTorch."""

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng
from numgrad.autograd import functional as F

A = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]])
X = np.array([0.5, -1.0, 2.0])
Y = np.array([1.5, 0.2])


def f_single(m):
    a = m.tensor(A)
    return lambda x: (a @ x).tanh()


def f_scalar(m):
    return lambda x: (x ** 3).sum() + (x[0] * x[1]) ** 2


def f_multi(m):
    return lambda x, y: ((x[:2] * y).exp(), (x ** 2).sum() * y)


def f_scalar_two(m):
    return lambda x, y: (x ** 2).sum() * y.sum() + (y ** 3).sum()


def _call(m, name):
    x = m.tensor(X)
    y = m.tensor(Y)
    v3 = m.tensor([1.0, -2.0, 0.5])
    v2 = m.tensor([0.7, 0.1])
    Fm = m.autograd.functional
    return {
        "jacobian_single": lambda: Fm.jacobian(f_single(m), x),
        "jacobian_multi": lambda: Fm.jacobian(f_multi(m), (x, y)),
        "hessian_single": lambda: Fm.hessian(f_scalar(m), x),
        "hessian_two": lambda: Fm.hessian(f_scalar_two(m), (x, y)),
        "vjp": lambda: Fm.vjp(f_single(m), x, v2),
        "vjp_scalar_default_v": lambda: Fm.vjp(f_scalar(m), x),
        "jvp": lambda: Fm.jvp(f_single(m), x, v3),
        "jvp_multi": lambda: Fm.jvp(f_multi(m), (x, y), (v3, v2)),
        "hvp": lambda: Fm.hvp(f_scalar(m), x, v3),
        "vhp": lambda: Fm.vhp(f_scalar(m), x, v3),
        "hvp_two": lambda: Fm.hvp(f_scalar_two(m), (x, y), (v3, v2)),
    }[name]()


NAMES = ["jacobian_single", "jacobian_multi", "hessian_single", "hessian_two", "vjp",
         "vjp_scalar_default_v", "jvp", "jvp_multi", "hvp", "vhp", "hvp_two"]


def _same(a, b):
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert isinstance(a, ng.Tensor)
        assert tuple(a.shape) == tuple(b.shape)
        assert_close(a, b, rtol=1e-10, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("name", NAMES)
def test_matches_pytorch(name):
    _same(_call(ng, name), _call(torch, name))


def test_closed_forms_without_torch():
    x = ng.tensor(X)
    j = F.jacobian(f_single(ng), x)
    expected = (1 - np.tanh(A @ X) ** 2)[:, None] * A
    assert_close(j, expected, rtol=1e-12)
    h = F.hessian(f_scalar(ng), x)
    expected_h = np.diag(6 * X)
    expected_h[0, 0] += 2 * X[1] ** 2
    expected_h[1, 1] += 2 * X[0] ** 2
    expected_h[0, 1] = expected_h[1, 0] = 4 * X[0] * X[1]
    assert_close(h, expected_h, rtol=1e-12)
    v = np.array([1.0, -2.0, 0.5])
    out, hv = F.hvp(f_scalar(ng), x, ng.tensor(v))
    assert_close(hv, expected_h @ v, rtol=1e-12)
    _, jv = F.jvp(f_single(ng), x, ng.tensor(v))
    assert_close(jv, expected @ v, rtol=1e-12)
    assert not out.requires_grad and not hv.requires_grad


def test_create_graph_keeps_results_differentiable():
    x = ng.tensor(X, requires_grad=True)
    j = F.jacobian(lambda t: t ** 2, x, create_graph=True)
    assert j.requires_grad
    j.sum().backward()
    assert_close(x.grad, np.full(3, 2.0))


def test_v_errors():
    with pytest.raises(RuntimeError, match="The vector v can only be None"):
        F.vjp(f_single(ng), ng.tensor(X))
