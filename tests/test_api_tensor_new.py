"""Tensor.new (the legacy constructor) and Tensor.resize_ against PyTorch: shapes, dtypes,
values, storage sharing, strides and errors."""

import numpy as np
import pytest
from conftest import raised

import numgrad as ng

torch = pytest.importorskip("torch")

NEW = [
    lambda L, x: x.new(), lambda L, x: x.new(2, 3), lambda L, x: x.new((2, 3)),
    lambda L, x: x.new([1, 2]), lambda L, x: x.new(L.Size([2, 3])),
    lambda L, x: x.new(np.array([1, 2])), lambda L, x: x.new(()), lambda L, x: x.new(2, 0),
    lambda L, x: x.new(2, 3, device="cpu"), lambda L, x: x.new(L.ones(2, dtype=L.float64)),
]
NEW_ERRORS = [
    lambda L, x: x.new(L.tensor([1, 2])), lambda L, x: x.new(2.5), lambda L, x: x.new(True),
    lambda L, x: x.new(2, 3, dtype=L.float32), lambda L, x: x.new(-1),
    lambda L, x: x.new([[1, 2], [3]]), lambda L, x: x.new(2, 3, requires_grad=True),
    lambda L, x: x.new([1, 2], 3), lambda L, x: x.new("a"), lambda L, x: x.new(2, "a"),
]


@pytest.mark.parametrize("k", range(len(NEW)))
def test_new_matches_torch(k):
    n = NEW[k](ng, ng.ones(2, 3, dtype=ng.float64))
    t = NEW[k](torch, torch.ones(2, 3, dtype=torch.float64))
    assert tuple(n.shape) == tuple(t.shape) and str(n.dtype) == str(t.dtype)
    assert not n.requires_grad
    if 0 < t.numel() and k not in (1, 4, 8):  # the sizes forms are uninitialised
        assert n.tolist() == t.tolist()


@pytest.mark.parametrize("k", range(len(NEW_ERRORS)))
def test_new_errors_match_torch(k):
    n = raised(NEW_ERRORS[k], ng, ng.ones(2, dtype=ng.float64))
    t = raised(NEW_ERRORS[k], torch, torch.ones(2, dtype=torch.float64))
    assert t is not None and n[0] == t[0]
    assert n[1].split("\n")[0] == t[1].split("\n")[0]


def test_new_of_a_tensor_shares_its_data():
    y = ng.ones(3)
    z = y.new(y)
    z[0] = 5
    assert y[0].item() == 5


RESIZE = [
    lambda L: L.arange(6.).resize_(2, 3), lambda L: L.arange(6.).resize_(4),
    lambda L: L.arange(6.).resize_((2, 2)), lambda L: L.arange(6.)[::2].resize_(3),
    lambda L: L.arange(6.)[::2].resize_(2), lambda L: L.arange(6.).view(2, 3).t().resize_(3, 2),
    lambda L: L.arange(6.).view(2, 3).t().resize_(2, 3), lambda L: L.arange(6.).resize_(0),
    lambda L: L.arange(6.)[2:].resize_(2, 2), lambda L: L.arange(6, dtype=L.int32).resize_(3, 2),
]


@pytest.mark.parametrize("k", range(len(RESIZE)))
def test_resize_matches_torch(k):
    n, t = RESIZE[k](ng), RESIZE[k](torch)
    assert n.shape == t.shape and n.stride() == t.stride() and n.tolist() == t.tolist()


def test_resize_shares_or_grows_storage_and_errors():
    base = ng.arange(6.)
    base.resize_(2, 2)
    base[1, 1] = 9
    v = ng.arange(6.)
    w = v.view(2, 3)
    v.resize_(3)
    v[0] = 7
    assert w[0, 0].item() == 7  # shrinking keeps the storage
    g = ng.arange(4.).resize_(3, 3)
    assert g.shape == (3, 3) and g.reshape(-1)[:4].tolist() == [0, 1, 2, 3]
    for f in (lambda L: L.ones(2, requires_grad=True).resize_(2),
              lambda L: (L.ones(2, requires_grad=True) * 2).resize_(2),
              lambda L: L.arange(6.).resize_(-1),
              lambda L: L.arange(6.).resize_(2, 3, memory_format=L.channels_last)):
        assert raised(f, ng) == raised(f, torch)
