"""Pieces of PyTorch's API that users reached for and numgrad lacked: ``Tensor.unfold``,
``round(decimals=)``, ``cdist`` and the ``nearest-exact`` and ``area`` modes of
``F.interpolate`` (``EmbeddingBag``'s ``padding_idx``, bicubic interpolation and the nuclear
norm have files of their own). Each against PyTorch: values, gradients (and float64 finite
differences), node names and errors (class and message)."""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, raised, requires_torch, to_numpy, torch

import numgrad as ng

pytestmark = requires_torch


def _pair(a, requires_grad=True):
    return (ng.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _sameraised(call):
    """``call(m)`` raises the same class and message under numgrad and PyTorch."""
    theirs = raised(call, torch)
    assert theirs is not None
    assert raised(call, ng) == theirs


def _weighted_backward(out, out_t, seed=1):
    w = np.random.default_rng(seed).uniform(0.5, 1.5, size=tuple(out_t.shape))
    (out * ng.tensor(w, dtype=out.dtype)).sum().backward()
    (out_t * torch.tensor(w, dtype=out_t.dtype)).sum().backward()
    return w


# ========================================================================================
# Tensor.unfold
# ========================================================================================

UNFOLD_ARGS = [((3, 5, 4), (1, 2, 1)), ((3, 5, 4), (1, 3, 2)), ((3, 5, 4), (-1, 1, 3)),
               ((3, 5, 4), (0, 3, 1)), ((3, 5, 4), (1, 0, 1)), ((3, 5, 4), (2, 4, 5)),
               ((7,), (0, 2, 3)), ((0, 3), (1, 2, 1)), ((0, 3), (0, 0, 1)), ((), (0, 1, 1)),
               ((), (-1, 0, 2))]


@pytest.mark.parametrize("shape,args", UNFOLD_ARGS, ids=[str(a) for a in UNFOLD_ARGS])
def test_unfold_matches_pytorch(shape, args):
    a = np.random.default_rng(0).standard_normal(shape)
    x, xt = _pair(a)
    y, yt = x.unfold(*args), xt.unfold(*args)
    assert y.shape == yt.shape and y.stride() == yt.stride()
    assert np.array_equal(to_numpy(y), to_numpy(yt))
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "UnfoldBackward0"
    node, node_t = y.grad_fn, yt.grad_fn
    for name in ("_saved_dimension", "_saved_self_sym_sizes", "_saved_size", "_saved_step"):
        ours, theirs = getattr(node, name), getattr(node_t, name)
        if name == "_saved_dimension":  # PyTorch shows a negative dim as unsigned
            ours, theirs = ours % 2**64, theirs % 2**64
        assert ours == theirs, name
    w = _weighted_backward(y, yt)
    assert_close(x.grad, xt.grad, rtol=1e-12, atol=1e-12)
    if a.size and y.numel():
        fd = finite_difference(lambda v: np.asarray(torch.tensor(v).unfold(*args)), [a], 0, w)
        assert_close(x.grad, fd, rtol=1e-6, atol=1e-7)


def test_unfold_is_a_view_sharing_storage():
    x = ng.arange(8.0)
    y = x.unfold(0, 3, 2)
    assert y._base is x
    x[4] = 100.0
    assert y[1, 2].item() == 100.0 and y[2, 0].item() == 100.0
    z = x.unfold(0, 2, 2)  # windows that do not overlap: writes go through to the base
    z.mul_(2)
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 200.0, 10.0, 12.0, 14.0]


def test_unfold_float32_and_integers_match_pytorch():
    a = np.arange(24).reshape(2, 12)
    for dt in ("float32", "int64", "int32", "uint8", "bool"):
        x, xt = ng.tensor(a.astype(dt)), torch.tensor(a.astype(dt))
        y, yt = x.unfold(1, 5, 3), xt.unfold(1, 5, 3)
        assert str(y.dtype) == str(yt.dtype)
        assert np.array_equal(to_numpy(y), to_numpy(yt))


def test_unfold_double_backward_matches_pytorch():
    a = np.random.default_rng(2).standard_normal((2, 6))
    x, xt = _pair(a)
    gy = np.random.default_rng(3).standard_normal((2, 2, 4))
    g, gt = _pair(gy)
    (gx,) = ng.autograd.grad(x.unfold(1, 4, 2), x, g, create_graph=True)
    (gxt,) = torch.autograd.grad(xt.unfold(1, 4, 2), xt, gt, create_graph=True)
    assert type(gx.grad_fn).__name__ == type(gxt.grad_fn).__name__ == "UnfoldBackwardBackward0"
    assert (gx.grad_fn._saved_dim, gx.grad_fn._saved_size, gx.grad_fn._saved_step) == (
        gxt.grad_fn._saved_dim, gxt.grad_fn._saved_size, gxt.grad_fn._saved_step)
    assert_close(gx, gxt, rtol=1e-12, atol=1e-12)
    _weighted_backward(gx, gxt, seed=4)
    assert_close(g.grad, gt.grad, rtol=1e-12, atol=1e-12)
    assert ng.autograd.gradcheck(lambda v: v.unfold(1, 4, 2), (x,))
    assert ng.autograd.gradgradcheck(lambda v: v.unfold(1, 3, 1), (x,))


@pytest.mark.parametrize("call", [
    "x.unfold(1, 4, 1)", "x.unfold(1, 2, 0)", "x.unfold(1, -1, 1)", "x.unfold(1, 2, -1)",
    "x.unfold(2, 1, 1)", "x.unfold(-3, 1, 1)", "x.unfold(1, 2.0, 1)", "x.unfold(1.0, 2, 1)",
    "x.unfold(1, 2, None)", "s.unfold(0, 2, 1)", "s.unfold(1, 1, 1)",
    "m.zeros(0, 3).unfold(0, 1, 1)",
])
def test_unfold_errors_match_pytorch(call):
    def run(m):
        x = m.zeros(2, 3)
        s = m.tensor(3.0)
        return eval(call, {"m": m, "x": x, "s": s})
    _sameraised(run)


def test_in_place_write_into_overlapping_windows_is_refused():
    """PyTorch writes overlapping windows in an order of its own (``mul_`` and ``add_`` give
    different kinds of answers); numgrad refuses rather than differ."""
    x = ng.arange(4.0, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.unfold(0, 2, 1).mul_(2)


# ========================================================================================
# round(decimals=)
# ========================================================================================

ROUND_VALUES = [1.2345, -2.5, 0.125, 2.675, -0.0, 0.5, 1.5, 1e30, -1e-30, 123456.789, np.inf,
                -np.inf, np.nan, 1e308, 5e-324, 0.05, -0.15, 1.005, 2.5e-8]


def _bits(t):
    a = to_numpy(t)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _same_bits(ours, theirs):
    a, b = to_numpy(ours), to_numpy(theirs)
    nan = np.isnan(a) & np.isnan(b)
    assert np.array_equal(np.where(nan, 0, _bits(ours)), np.where(nan, 0, _bits(theirs)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("decimals", [None, 0, 1, 2, 3, 7, -1, -2, -30, 15, 39, 308, 400, -400])
def test_round_decimals_matches_pytorch_bit_for_bit(dtype, decimals):
    with np.errstate(over="ignore"):
        a = np.array(ROUND_VALUES, dtype=dtype)
    kw = {} if decimals is None else {"decimals": decimals}
    x, xt = _pair(a)
    y, yt = ng.round(x, **kw), torch.round(xt, **kw)
    _same_bits(y, yt)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
    _same_bits(x.round(**kw), xt.round(**kw))
    _same_bits(ng.round(x.detach(), **kw, out=ng.empty(0, dtype=x.dtype)),
               torch.round(xt.detach(), **kw, out=torch.empty(0, dtype=xt.dtype)))
    xi, xit = x.detach().clone(), xt.detach().clone()
    xi.round_(**kw)
    xit.round_(**kw)
    _same_bits(xi, xit)
    y.sum().backward()
    yt.sum().backward()
    _same_bits(x.grad, xt.grad)


def test_round_decimals_holds_for_random_values():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    hnp = pytest.importorskip("hypothesis.extra.numpy")

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(st.sampled_from(["float32", "float64"]), st.integers(-12, 20),
                      st.data())
    def prop(dtype, decimals, data):
        width = 32 if dtype == "float32" else 64
        a = data.draw(hnp.arrays(dtype, st.integers(1, 12),
                                 elements=st.floats(width=width, allow_nan=False)))
        _same_bits(ng.round(ng.tensor(a), decimals=decimals),
                   torch.round(torch.tensor(a), decimals=decimals))
    prop()


def test_round_decimals_gradient_is_zero_and_finite_differences_agree():
    a = np.random.default_rng(5).uniform(-3, 3, (3, 4))
    x, xt = _pair(a)
    w = _weighted_backward(ng.round(x, decimals=1), torch.round(xt, decimals=1))
    assert_close(x.grad, xt.grad, rtol=0, atol=0)
    fd = finite_difference(lambda v: np.round(v * 10) / 10, [a], 0, w)
    assert_close(x.grad, fd, rtol=0, atol=1e-9)


@pytest.mark.parametrize("call", [
    "x.round(2)", "m.round(x, 1)", "m.round(x, decimals=1.5)", "x.round(decimals=1.5)",
    "x.round(decimals=True)", "x.round(decimals=None)", "m.round(x, decimals=None)",
    "x.detach().round_(decimals=1.5)", "x.detach().round_(1)", "m.round(x, decimals=2**70)",
    "m.round(m.tensor([1, 2]), decimals=0)", "m.round(m.tensor([1, 2]), decimals=1)",
    "m.round(m.tensor([True]), decimals=1)",
    "m.round(x, decimals=1, out=m.empty(2, dtype=m.int64))",
    "m.round(x.detach(), out=m.empty(2, dtype=m.float64))", "m.floor(x.detach(), out=m.empty(2, "
    "dtype=m.float64))", "m.trunc(m.tensor([1]), out=m.empty(1))",
])
def test_round_decimals_errors_match_pytorch(call):
    def run(m):
        x = m.tensor([1.25, -2.5], requires_grad=True)
        return eval(call, {"m": m, "x": x})
    _sameraised(run)


# ========================================================================================
# cdist
# ========================================================================================

CDIST_SHAPES = [((3, 5), (4, 5)), ((2, 3, 5), (4, 5)), ((2, 1, 3, 4), (3, 6, 4)),
                ((30, 3), (4, 3)), ((2, 30, 3), (4, 3)), ((1, 3, 2), (26, 2)), ((0, 3), (2, 3)),
                ((3, 0), (2, 0)), ((2, 0, 3), (4, 3))]
CDIST_P = [0.0, 1.0, 2.0, float("inf"), 3.0, 1.5, 0.5]


def _graph(node, depth=0, out=None):
    out = [] if out is None else out
    if node is not None:
        out.append((depth, type(node).__name__))
        for child, _ in node.next_functions:
            _graph(child, depth + 1, out)
    return out


@pytest.mark.parametrize("s1,s2", CDIST_SHAPES, ids=[f"{a}-{b}" for a, b in CDIST_SHAPES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cdist_matches_pytorch(s1, s2, dtype):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(s1).astype(dtype), rng.standard_normal(s2).astype(dtype)
    if a.size and b.size:
        a.reshape(-1)[0] = b.reshape(-1)[0]  # a coordinate equal (no point on another)
    tol = {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-5, "atol": 2e-5}
    for p in CDIST_P:
        (x, xt), (y, yt) = _pair(a), _pair(b)
        out, out_t = ng.cdist(x, y, p), torch.cdist(xt, yt, p)
        assert out.shape == out_t.shape and str(out.dtype) == str(out_t.dtype)
        assert_close(out, out_t, **tol, msg=f"p={p}")
        assert _graph(out.grad_fn)[:2] == _graph(out_t.grad_fn)[:2], p
        _weighted_backward(out, out_t)
        assert_close(x.grad, xt.grad, **tol, msg=f"p={p}")
        assert_close(y.grad, yt.grad, **tol, msg=f"p={p}")


@pytest.mark.parametrize("p", CDIST_P[1:])
def test_cdist_gradients_agree_with_finite_differences(p):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4))
    x, y = ng.tensor(a, requires_grad=True), ng.tensor(b, requires_grad=True)
    out = ng.cdist(x, y, p)
    w = rng.uniform(0.5, 1.5, out.shape)
    (out * ng.tensor(w)).sum().backward()

    def ref(a, b):
        d = np.abs(a[..., :, None, :] - b[None, None])
        if p == float("inf"):
            return d.max(-1)
        return (d ** p).sum(-1) ** (1 / p)
    for i, t in enumerate((x, y)):
        assert_close(t.grad, finite_difference(ref, [a, b], i, w), rtol=1e-6, atol=1e-7)
    assert ng.autograd.gradgradcheck(lambda u, v: ng.cdist(u, v, p), (x, y))


def test_cdist_compute_modes_and_pytorchs_threshold():
    rng = np.random.default_rng(2)
    for r1, r2, mode, node in [
            (25, 25, "use_mm_for_euclid_dist_if_necessary", "CdistBackward0"),
            (26, 3, "use_mm_for_euclid_dist_if_necessary", "ViewBackward0"),
            (3, 26, "donot_use_mm_for_euclid_dist", "CdistBackward0"),
            (3, 4, "use_mm_for_euclid_dist", "ViewBackward0")]:
        a, b = rng.standard_normal((2, r1, 3)), rng.standard_normal((r2, 3))
        (x, xt), (y, yt) = _pair(a), _pair(b)
        out, out_t = ng.cdist(x, y, compute_mode=mode), torch.cdist(xt, yt, compute_mode=mode)
        assert type(out.grad_fn).__name__ == type(out_t.grad_fn).__name__ == node
        assert [n for _, n in _graph(out.grad_fn)][:2] == [n for _, n in _graph(out_t.grad_fn)][:2]
        assert_close(out, out_t, rtol=1e-9, atol=1e-9)
        _weighted_backward(out, out_t)
        assert_close(x.grad, xt.grad, rtol=1e-8, atol=1e-9)
        assert_close(y.grad, yt.grad, rtol=1e-8, atol=1e-9)
    # a point with itself: distance 0, gradient 0 on both paths
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        x = ng.tensor([[1.0, 2.0]], requires_grad=True)
        ng.cdist(x, x.detach(), compute_mode=mode).sum().backward()
        assert x.grad.tolist() == [[0.0, 0.0]]


@pytest.mark.parametrize("call", [
    "m.cdist(a[0], b)", "m.cdist(a, b[0])", "m.cdist(a, b[:, :1])", "m.cdist(a, b, -1.0)",
    "m.cdist(a.long(), b)", "m.cdist(a, b.long())", "m.cdist(a, b.float())",
    "m.cdist(a.float(), b)", "m.cdist(a, b, compute_mode='x')", "m.cdist(a, b, compute_mode=None)",
    "m.cdist(a, b, p='2')", "m.cdist(a.expand(2, 3, 2), b.expand(3, 4, 2))",
    "m.cdist(a.float(), b.expand(30, 2), compute_mode='use_mm_for_euclid_dist')",
    "m.cdist(a.tolist(), b)",
])
def test_cdist_errors_match_pytorch(call):
    def run(m):
        a = m.ones(3, 2, dtype=m.float64)
        b = m.zeros(4, 2, dtype=m.float64)
        return eval(call, {"m": m, "a": a, "b": b})
    _sameraised(run)


# ========================================================================================
# F.interpolate: nearest-exact, area
# ========================================================================================

RESIZES = [{"size": 4}, {"scale_factor": 1.7}, {"scale_factor": 0.6}, {"scale_factor": 2.0},
           {"scale_factor": 0.5}, {"scale_factor": 2.3, "recompute_scale_factor": True},
           {"size": 13}]


@pytest.mark.parametrize("mode", ["nearest-exact", "area"])
@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 5, 6), (1, 2, 2, 3)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_interpolate_nearest_exact_and_area_match_pytorch(mode, shape, dtype):
    rng = np.random.default_rng(0)
    tol = {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-6, "atol": 1e-6}
    for kw in RESIZES:
        if "size" in kw and len(shape) == 4:
            kw = {"size": (kw["size"], 3)}
        a = rng.standard_normal(shape).astype(dtype)
        x, xt = _pair(a)
        out = ng.nn.functional.interpolate(x, mode=mode, **kw)
        out_t = torch.nn.functional.interpolate(xt, mode=mode, **kw)
        assert out.shape == out_t.shape
        assert_close(out, out_t, **tol, msg=str(kw))
        if mode == "nearest-exact":  # area is numgrad's adaptive_avg_pool (its own nodes)
            assert type(out.grad_fn).__name__ == type(out_t.grad_fn).__name__
        w = _weighted_backward(out, out_t)
        assert_close(x.grad, xt.grad, **tol, msg=str(kw))
        if dtype == "float64" and mode == "area":
            fd = finite_difference(lambda v, kw=kw: np.asarray(torch.nn.functional.interpolate(
                torch.tensor(v), mode=mode, **kw)), [a], 0, w)
            assert_close(x.grad, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call", [
    "F.interpolate(x, size=3, mode='nearest-exact', align_corners=True)",
    "F.interpolate(x, size=3, mode='area', align_corners=False)",
    "F.interpolate(x.long(), size=3, mode='nearest-exact')",
    "F.interpolate(x[None].long(), size=3, mode='nearest-exact')",
    "F.interpolate(x.long(), size=3, mode='area')",
    "F.interpolate(x, size=3, mode='area', antialias=True)",
    "F.interpolate(x, size=3, mode='bicubic')",
    "F.interpolate(x, size=3, mode='nearest-exact', antialias=True)",
    "F.interpolate(x, size=(3, 3), mode='nearest-exact')",
])
def test_interpolate_new_mode_errors_match_pytorch(call):
    def run(m):
        return eval(call, {"F": m.nn.functional, "x": m.ones(2, 3, 4)})
    _sameraised(run)


def test_interpolate_modes_not_built_yet_say_so():
    x = ng.ones(1, 2, 4, 4)
    with pytest.raises(NotImplementedError, match="'lanczos' is not supported by numgrad"):
        ng.nn.functional.interpolate(x, size=2, mode="lanczos", antialias=True)
