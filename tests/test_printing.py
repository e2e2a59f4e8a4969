"""repr/str of tensors and nodes, character for character as PyTorch prints them."""

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng


def test_seed_outputs_spelled_out():
    x = ng.ones(2, 2, requires_grad=True)
    assert repr(x) == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"
    y = x + 2
    assert str(y) == "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"
    out = (y * y * 3).mean()
    assert str(out) == "tensor(27., grad_fn=<MeanBackward0>)"
    out.backward()
    assert str(x.grad) == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"
    assert repr(ng.tensor([1.024e2, 1.024e3, 1.024e-1])) == \
        "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])"
    assert repr(ng.tensor([1.0, 2.0], dtype=ng.float64)) == "tensor([1., 2.], dtype=torch.float64)"
    assert repr(ng.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ng.tensor([True, False])) == "tensor([ True, False])"
    assert repr(ng.zeros(0, 3)) == "tensor([], size=(0, 3))"


def _samples():
    rng = np.random.default_rng(0)
    yield rng.random((5, 5))
    yield rng.standard_normal((3, 4)) * 100
    yield rng.standard_normal((3, 4)) * 1e-5
    yield np.array([1e-5, 1.0])
    yield np.array([1e9, 1.0])
    yield np.array([100.0, 2000.0])
    yield np.array([np.nan, 1.5, np.inf])
    yield np.array([1.0, np.nan])
    yield np.array([-np.inf, 0.0])
    yield np.array([0.0, -0.0, 1.0])
    yield np.array([-1.5, 2.25])
    yield np.array([1e-10])
    yield np.array([123456789.0])
    yield np.array(3.25)
    yield np.arange(2000.0).reshape(40, 50)
    yield np.arange(1200.0)
    yield rng.standard_normal((2, 3, 4))
    yield rng.standard_normal((12, 12, 12))
    yield rng.standard_normal(30)
    yield rng.integers(-1000, 1000, size=(4, 5))
    yield np.arange(3000).reshape(3, 1000)
    yield rng.random((2, 2)) > 0.5
    yield np.zeros((2, 0))
    yield np.zeros(0)


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "native"])
def test_repr_matches_pytorch(dtype):
    for arr in _samples():
        if dtype != "native" and arr.dtype.kind == "f":
            arr = arr.astype(dtype)
        ours = ng.tensor(arr)
        theirs = torch.tensor(arr)
        assert repr(ours) == repr(theirs), arr


@requires_torch
def test_repr_of_graph_tensors_matches_pytorch():
    torch.manual_seed(0)
    ng.manual_seed(0)
    for m in (ng, torch):
        m.manual_seed(0)
    outs = []
    for m in (ng, torch):
        m.manual_seed(0)
        x = m.randn(3, 4, requires_grad=True)
        y = x ** 2 * m.exp(x)
        outs.append((repr(x), repr(y), repr(y.sum()), repr(x[0, 0]), repr(y.mean(1))))
    assert outs[0] == outs[1]


def test_node_repr_and_type():
    x = ng.rand(2, requires_grad=True)
    y = x * 2
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    assert str(type(y.grad_fn)) == "<class 'MulBackward0'>"


def test_set_printoptions():
    try:
        ng.set_printoptions(precision=2)
        assert repr(ng.tensor([1.2345])) == "tensor([1.23])"
    finally:
        ng.set_printoptions(profile="default")
    assert repr(ng.tensor([1.2345])) == "tensor([1.2345])"
