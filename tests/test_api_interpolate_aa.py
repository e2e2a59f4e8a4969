"""``F.interpolate(..., antialias=True)`` with ``'bilinear'`` and ``'bicubic'`` on 4-D input:
PyTorch's (PIL's) filters widened by the scale when downsampling (triangle; cubic with
A = -0.5), normalised per output. Against PyTorch: values (float32 and float64), gradients
(and float64 finite differences), node names and errors."""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, raised, requires_torch, to_numpy, torch
from hypothesis import given, settings
from hypothesis import strategies as st

import numgrad as ng

pytestmark = requires_torch

NODES = {"bilinear": "UpsampleBilinear2DAaBackward0", "bicubic": "UpsampleBicubic2DAaBackward0"}


def _both(a, mode, kw, seed=0):
    """(numgrad output, input grad), (torch output, input grad), upstream gradient."""
    res = []
    g = None
    for lib in (ng, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.nn.functional.interpolate(x, mode=mode, antialias=True, **kw)
        if g is None:
            g = np.random.default_rng(seed).standard_normal(tuple(y.shape)).astype(a.dtype)
        y.backward(lib.tensor(g))
        res.append((y, to_numpy(x.grad)))
    return res[0], res[1], g


CASES = [((8, 10), dict(size=(4, 5))),            # by 2
         ((9, 7), dict(size=(4, 3))),             # non-integer factors
         ((23, 17), dict(size=(3, 4))),           # wide supports (many taps)
         ((6, 5), dict(size=1)),                  # to one pixel
         ((4, 5), dict(size=(9, 11))),            # upsampling
         ((7, 9), dict(size=(3, 14))),            # down one way, up the other
         ((6, 9), dict(size=(6, 4))),             # one dim unchanged
         ((9, 11), dict(scale_factor=0.5)),
         ((10, 7), dict(scale_factor=(0.37, 1.6))),
         ((10, 7), dict(scale_factor=0.45, recompute_scale_factor=True))]


@pytest.mark.parametrize("shape,kw", CASES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_antialias_matches_pytorch(shape, kw, align_corners, mode, dtype):
    a = np.random.default_rng(1).standard_normal((2, 3) + shape).astype(dtype)
    (y, gx), (ty, tgx), _ = _both(a, mode, dict(kw, align_corners=align_corners))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert y.dtype == (ng.float32 if dtype == np.float32 else ng.float64)
    assert_close(y.detach(), ty.detach(), **tol)
    assert_close(gx, tgx, **tol)
    assert y.grad_fn.name() == ty.grad_fn.name() == NODES[mode]


@pytest.mark.parametrize("kw", [dict(size=(2, 7)), dict(size=(5, 2), align_corners=True),
                                dict(scale_factor=(1.1, 0.5))])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_gradient_matches_finite_differences(kw, mode):
    # scale_factor 1.1 on 5 rows keeps 5 rows: PyTorch's forward leaves that dim as it is,
    # and so does the gradient here (PyTorch's own backward still filters it)
    a = np.random.default_rng(2).standard_normal((1, 2, 5, 4))
    (y, gx), _, g = _both(a, mode, kw)

    def f(v):
        return ng.nn.functional.interpolate(ng.tensor(v), mode=mode, antialias=True,
                                            **kw).numpy()
    assert_close(gx, finite_difference(f, [a], 0, g), rtol=1e-6, atol=1e-7)


def test_antialias_double_backward_and_empty_batch():
    a = np.random.default_rng(3).standard_normal((1, 1, 6, 5))
    x = ng.tensor(a, requires_grad=True)
    y = ng.nn.functional.interpolate(x, size=(3, 2), mode="bicubic", antialias=True)
    (gx,) = ng.autograd.grad((y * y).sum(), x, create_graph=True)
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.nn.functional.interpolate(tx, size=(3, 2), mode="bicubic", antialias=True)
    (tgx,) = torch.autograd.grad((ty * ty).sum(), tx, create_graph=True)
    assert_close(gx.detach(), tgx.detach(), rtol=1e-12, atol=1e-12)
    (ggx,) = ng.autograd.grad(gx.sum(), x)
    (tggx,) = torch.autograd.grad(tgx.sum(), tx)
    assert_close(ggx, tggx, rtol=1e-12, atol=1e-12)
    e = ng.nn.functional.interpolate(ng.ones(0, 2, 4, 4), size=2, mode="bilinear",
                                     antialias=True)
    assert tuple(e.shape) == (0, 2, 2, 2)


@pytest.mark.parametrize("call", [
    "F.interpolate(x[:, :, 0], size=3, mode='bilinear', antialias=True)",
    "F.interpolate(x[None], size=3, mode='bilinear', antialias=True)",
    "F.interpolate(x[None], size=3, mode='bicubic', antialias=True)",
    "F.interpolate(x, size=3, mode='nearest', antialias=True)",
    "F.interpolate(x, size=3, mode='area', antialias=True)",
    "F.interpolate(x, size=3, mode='linear', antialias=True)",
    "F.interpolate(x.long(), size=3, mode='bilinear', antialias=True)",
    "F.interpolate(x.double().half(), size=3, mode='bicubic', antialias=True)",
    "F.interpolate(x, size=(0, 3), mode='bilinear', antialias=True)",
    "F.interpolate(x[:, :0], size=3, mode='bicubic', antialias=True)",
    "F.interpolate(x, size=(3, 3, 3), mode='bilinear', antialias=True)",
    "F.interpolate(x, size=3, scale_factor=2, mode='bilinear', antialias=True)",
    "F.interpolate(x, size=3, mode='lanczos')",
    "F.interpolate(x, size=3, mode='lanczos', align_corners=True, antialias=True)",
    "F.interpolate(x[:, :, 0], size=3, mode='lanczos', antialias=True)",
])
def test_antialias_errors_match_pytorch(call):
    def run(m):
        return lambda: eval(call, {"F": m.nn.functional, "x": m.ones(2, 3, 4, 4)})
    expected = raised(run(torch))
    assert expected is not None
    assert raised(run(ng)) == expected


def test_antialias_not_built_yet_says_so():
    x = ng.ones(1, 2, 4, 4)
    with pytest.raises(NotImplementedError, match="uint8 input is not supported by numgrad"):
        ng.nn.functional.interpolate(x.to(ng.uint8), size=2, mode="bilinear", antialias=True)
    with pytest.raises(NotImplementedError, match="'lanczos' is not supported by numgrad"):
        ng.nn.functional.interpolate(x, size=2, mode="lanczos", antialias=True)


def _two_passes(a, mode, oh, align_corners):
    """PyTorch's values for output width 1 taken one dim at a time (W, then H as the W of the
    transposed tensor): PyTorch's single call gets these wrong (each output row repeats the
    first) when H changes too, while its gradient is right."""
    F = torch.nn.functional
    kw = dict(mode=mode, antialias=True, align_corners=align_corners)
    y = F.interpolate(torch.tensor(a), size=(a.shape[2], 1), **kw)
    return F.interpolate(y.transpose(2, 3), size=(1, oh), **kw).transpose(2, 3)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_width_one_output(mode):
    a = np.random.default_rng(4).standard_normal((1, 2, 5, 3))
    for oh in (2, 8):
        (y, gx), (ty, tgx), _ = _both(a, mode, dict(size=(oh, 1)))
        assert not np.allclose(to_numpy(ty.detach()), to_numpy(_two_passes(a, mode, oh, False)))
        assert_close(y.detach(), _two_passes(a, mode, oh, False), rtol=1e-12, atol=1e-12)
        assert_close(gx, tgx, rtol=1e-12, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), oh=st.integers(1, 8), ow=st.integers(1, 8),
       mode=st.sampled_from(["bilinear", "bicubic"]), align_corners=st.booleans())
def test_antialias_random_sizes(h, w, oh, ow, mode, align_corners):
    a = np.random.default_rng(h * 13 + w).standard_normal((1, 2, h, w))
    (y, gx), (ty, tgx), _ = _both(a, mode, dict(size=(oh, ow), align_corners=align_corners))
    if ow == 1 and oh != h:
        ty = _two_passes(a, mode, oh, align_corners)
    assert_close(y.detach(), ty.detach(), rtol=1e-12, atol=1e-12)
    assert_close(gx, tgx, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_non_finite_input_matches_pytorch(mode):
    # the zero-weight padding terms add exactly 0: inf and nan spread as in PyTorch's windows
    a = np.random.default_rng(5).standard_normal((1, 2, 9, 10))
    a[0, 0, 4, 4], a[0, 1, 2, 7] = np.inf, np.nan
    for size in ((4, 4), (3, 7), (13, 12)):
        x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        y = ng.nn.functional.interpolate(x, size=size, mode=mode, antialias=True)
        ty = torch.nn.functional.interpolate(tx, size=size, mode=mode, antialias=True)
        assert_close(y.detach(), ty.detach(), rtol=1e-12, atol=1e-12)
        g = np.ones(tuple(ty.shape))
        g[0, 0, 1, 1] = np.inf
        y.backward(ng.tensor(g))
        ty.backward(torch.tensor(g))
        assert_close(x.grad, tx.grad, rtol=1e-12, atol=1e-12)
