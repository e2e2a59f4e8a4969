"""``F.interpolate(mode='bicubic')`` on 4-D input: PyTorch's cubic convolution (A = -0.75)
with the source taps clamped to the border, with and without ``align_corners``, by ``size``
or ``scale_factor``. Against PyTorch: values (float32 and float64), gradients (and float64
finite differences), node names and errors."""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, raised, requires_torch, to_numpy, torch
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng

pytestmark = requires_torch


def _both(a, kw, seed=0):
    """(numgrad output, input grad), (torch output, input grad), upstream gradient."""
    res = []
    g = None
    for lib in (ng, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.nn.functional.interpolate(x, mode="bicubic", **kw)
        if g is None:
            g = np.random.default_rng(seed).standard_normal(tuple(y.shape)).astype(a.dtype)
        y.backward(lib.tensor(g))
        res.append((y, to_numpy(x.grad)))
    return res[0], res[1], g


CASES = [dict(size=(9, 4)), dict(size=1), dict(size=(5, 7)), dict(size=(2, 13)),
         dict(scale_factor=1.7), dict(scale_factor=(0.6, 2.5)), dict(scale_factor=3),
         dict(scale_factor=2.2, recompute_scale_factor=True)]


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bicubic_matches_pytorch(kw, align_corners, dtype):
    a = np.random.default_rng(1).standard_normal((2, 3, 5, 7)).astype(dtype)
    (y, gx), (ty, tgx), _ = _both(a, dict(kw, align_corners=align_corners))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert_close(y.detach(), ty.detach(), **tol)
    assert_close(gx, tgx, **tol)
    assert y.grad_fn.name() == ty.grad_fn.name() == "UpsampleBicubic2DBackward0"


@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_gradient_matches_finite_differences(align_corners):
    a = np.random.default_rng(2).standard_normal((1, 2, 4, 3))
    kw = dict(size=(6, 5), align_corners=align_corners)
    (y, gx), _, g = _both(a, kw)

    def f(v):
        return ng.nn.functional.interpolate(ng.tensor(v), mode="bicubic", **kw).numpy()
    assert_close(gx, finite_difference(f, [a], 0, g), rtol=1e-6, atol=1e-7)


def test_bicubic_default_align_corners_and_one_pixel():
    a = np.random.default_rng(3).standard_normal((1, 1, 1, 1))
    for kw in (dict(size=(3, 2)), dict(scale_factor=2, align_corners=True)):
        (y, gx), (ty, tgx), _ = _both(a, kw)
        assert_close(y.detach(), ty.detach())
        assert_close(gx, tgx)


@pytest.mark.parametrize("call", [
    "F.interpolate(x, size=3, mode='bicubic')",
    "F.interpolate(x[:, :, 0], size=3, mode='bicubic')",
    "F.interpolate(x.long(), size=3, mode='bicubic')",
    "F.interpolate(x, size=(0, 3), mode='bicubic')",
    "F.interpolate(x, size=3, mode='bicubic', antialias=True)",
    "F.interpolate(x, size=(3, 3, 3), mode='bicubic')",
])
def test_bicubic_errors_match_pytorch(call):
    def run(m):
        return lambda: eval(call, {"F": m.nn.functional, "x": m.ones(2, 3, 4, 4)})
    expected = raised(run(torch))
    if call.startswith("F.interpolate(x, size=3,"):  # valid (antialias: test_api_interpolate_aa)
        assert expected is None and raised(run(ng)) is None
        return
    assert expected is not None
    assert raised(run(ng)) == expected


@settings(max_examples=20, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 6), oh=st.integers(1, 9), ow=st.integers(1, 9),
       align_corners=st.booleans())
def test_bicubic_random_sizes(h, w, oh, ow, align_corners):
    a = np.random.default_rng(h * 10 + w).standard_normal((1, 2, h, w))
    (y, gx), (ty, tgx), _ = _both(a, dict(size=(oh, ow), align_corners=align_corners))
    assert_close(y.detach(), ty.detach(), rtol=1e-12, atol=1e-12)
    assert_close(gx, tgx, rtol=1e-12, atol=1e-12)
