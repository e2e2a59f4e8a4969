"""The row copy kernel (kernels/cpu/strided_copy.py) behind ``contiguous()`` and clones of
views whose rows are contiguous: every item lands where NumPy puts it, for each dtype and
layout, and layouts it cannot take go to the elementwise kernel."""

import itertools

import numpy as np
import pytest

import numgrad
from numgrad.kernels.cpu import elementwise as E
from numgrad.kernels.cpu import strided_copy


def _views(base):
    # sliced rows (the q/k/v slices of a fused projection), permutations keeping or moving the
    # last dim (head split and merge), a reversed last dim, size-1 dims
    yield base[:, :, :5]
    yield base[:, 1:, ::2]
    for perm in itertools.permutations(range(3)):
        yield base.transpose(perm)
    yield base[..., ::-1]
    yield base[:1, :, :1]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_copies_every_layout(dtype):
    base = (np.random.default_rng(0).random((3, 4, 8)) * 50).astype(dtype)
    for v in _views(base):
        for lead in ((), (2,)):
            src = np.broadcast_to(v, lead + v.shape).copy()[..., :] if lead else v
            out = E.unary(E.copy, src, src.dtype)
            assert out.flags.c_contiguous and out.dtype == src.dtype
            np.testing.assert_array_equal(out, src)
            # into a strided destination: the bytes around it stay untouched
            big = np.zeros((2,) + src.shape, dtype)
            E.unary(E.copy, src, src.dtype, out=big[1])
            np.testing.assert_array_equal(big[1], src)
            assert not big[0].any()


def test_fits_only_contiguous_rows():
    a = np.zeros((1, 2, 3, 4), np.float32)
    assert strided_copy.fits(a.transpose(0, 2, 1, 3), a.copy().transpose(0, 2, 1, 3))
    assert not strided_copy.fits(a.transpose(0, 1, 3, 2), np.zeros((1, 2, 4, 3), np.float32))
    assert not strided_copy.fits(a, a.astype(np.float64))
    assert not strided_copy.fits(a, a.astype(np.float16))


def test_contiguous_of_head_split_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((2, 5, 12)).astype(np.float32)
    q = numgrad.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    y = q[:, :, 4:8].reshape(2, 5, 2, 2).transpose(1, 2).contiguous()
    ty = t[:, :, 4:8].reshape(2, 5, 2, 2).transpose(1, 2).contiguous()
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    g = np.arange(40, dtype=np.float32).reshape(2, 2, 5, 2)
    y.backward(numgrad.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(q.grad.numpy(), t.grad.numpy())
