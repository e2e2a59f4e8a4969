"""Numerics at the edges (huge, infinite and nan inputs, ties, overflow) against PyTorch.

Each case runs the same function under numgrad and PyTorch on the same values and compares
the result and the gradient of every input (nan positions included)."""

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng
import numgrad.nn.functional as NF
from numgrad.kernels.cpu import elementwise as EW
from numgrad.kernels.cpu import reduction as RED

if torch is not None:
    import torch.nn.functional as TF
else:  # pragma: no cover
    TF = None

pytestmark = requires_torch

nan, inf = float("nan"), float("inf")
F32, F64 = np.float32, np.float64


def _run(lib, fn, arrays, grad_seed):
    F = NF if lib is ng else TF
    xs = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    y = fn(lib, F, *xs)
    g = np.random.default_rng(grad_seed).uniform(0.5, 1.5, y.shape).astype(arrays[0].dtype)
    if y.requires_grad:
        y.backward(lib.tensor(g))
    grads = [None if x.grad is None else np.array(x.grad.numpy()) for x in xs]
    return np.array(y.detach().numpy()), grads


def check(fn, *values, dtype=F32, rtol=1e-5, atol=1e-6, grads=True, seed=0):
    """fn(lib, F, *tensors) under numgrad and PyTorch: equal values and input gradients."""
    arrays = [np.array(v, dtype=dtype) for v in values]
    got, got_g = _run(ng, fn, arrays, seed)
    want, want_g = _run(torch, fn, arrays, seed)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if grads:
        for k, (a, b) in enumerate(zip(got_g, want_g)):
            assert (a is None) == (b is None), f"grad {k}: {a} vs {b}"
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True,
                                           err_msg=f"gradient of input {k}")


# ----------------------------------------------------------------------------------------
# the softmax family: huge equal logits (the "Trust" issue), inf, nan
# ----------------------------------------------------------------------------------------

HUGE = [[1e20, 1e20], [1e20, 1e20, 0.0], [-1e20, 5.0, 5.0], [3e38, 3e38, -3e38],
        [1e30, -1e30, 0.0], [2.0, 1.0, 1e-30]]
SPECIAL = [[-inf, 0.0, 1.0], [-inf, -inf], [inf, 0.0], [inf, inf], [nan, 0.0], [0.0, nan],
           [inf, nan], [-inf, -inf, 3.0]]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("row", HUGE + SPECIAL)
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_family_rows(op, row, dtype):
    if op == "logsumexp":
        check(lambda L, F, x: L.logsumexp(x, 0), row, dtype=dtype)
    else:
        check(lambda L, F, x: getattr(F, op)(x, 0), row, dtype=dtype)


def test_log_softmax_of_equal_huge_logits_is_minus_log_n():
    # x - (max + log sum) rounded max + log(sum) back to max: 0 and gradient [0, 1]
    for dtype in (F32, F64):
        x = ng.tensor(np.full((1, 2), 1e20, dtype), requires_grad=True)
        loss = NF.cross_entropy(x, ng.tensor([1]))
        loss.backward()
        assert abs(loss.item() - np.log(2)) < 1e-6
        np.testing.assert_allclose(x.grad.numpy(), [[0.5, -0.5]], rtol=1e-6)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_family_along_every_dim(op, dim, dtype):
    # dim -1 of a C-contiguous tensor takes the vectorized row kernels, the others the 3-D ones
    x = np.array([[1e20, 1e20, 0.0, -inf], [nan, 1.0, 2.0, 3.0], [-inf, -inf, -inf, -inf],
                  [inf, 1.0, 2.0, 3.0], [3e38, 3e38, 1.0, 2.0]])
    if op == "logsumexp":
        check(lambda L, F, t: L.logsumexp(t, dim), x, dtype=dtype)
        check(lambda L, F, t: L.logsumexp(t, dim, keepdim=True), x, dtype=dtype)
    else:
        check(lambda L, F, t: getattr(F, op)(t, dim), x, dtype=dtype)
        check(lambda L, F, t: getattr(F, op)(t.t(), dim), x, dtype=dtype)  # strided


@pytest.mark.parametrize("dtype", [F32, F64])
def test_log_softmax_of_huge_logits_on_large_rows(dtype):
    # large enough for the multithreaded row kernel (and its fastmath must not undo the fix)
    x = np.full((4, 20000), 1e20, dtype)
    x[1] = -3e37
    x[2, ::2] = 0.0
    x[3] = np.random.default_rng(0).standard_normal(20000) * 1e25
    check(lambda L, F, t: F.log_softmax(t, 1), x, dtype=dtype, rtol=1e-4)
    check(lambda L, F, t: F.softmax(t, 1), x, dtype=dtype, rtol=1e-4)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("logits,target", [
    ([1e20, 1e20], 1), ([1e20, 1e20], 0), ([-inf, 0.0, 1.0], 1), ([-inf, 0.0, 1.0], 0),
    ([-inf, -inf], 0), ([inf, 0.0], 0), ([3e38, -3e38], 0), ([3e38, 3e38], 1),
    ([nan, 1.0, 0.0], 2), ([1e30, 0.0, -1e30], 2),
])
def test_cross_entropy_extremes(logits, target, dtype):
    check(lambda L, F, x: F.cross_entropy(x[None], L.tensor([target])), logits, dtype=dtype)
    check(lambda L, F, x: F.cross_entropy(x[None], L.tensor([target]), label_smoothing=0.1),
          logits, dtype=dtype)


def test_cross_entropy_probability_targets_with_minus_inf():
    check(lambda L, F, x: F.cross_entropy(x[None], L.tensor([[0.0, 0.5, 0.5]])),
          [-1e20, 0.0, 1.0])
    check(lambda L, F, x: F.cross_entropy(x[None], L.tensor([[0.0, 0.5, 0.5]])),
          [1e20, 1e20, 1.0])


# ----------------------------------------------------------------------------------------
# nan and ties in the piecewise ops
# ----------------------------------------------------------------------------------------

PIECE = [nan, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, inf, -inf]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("op", [
    lambda L, F, x: L.relu(x), lambda L, F, x: F.relu(x), lambda L, F, x: x.abs(),
    lambda L, F, x: x.sign(), lambda L, F, x: x.clamp(-1.0, 1.0),
    lambda L, F, x: x.clamp(min=0.0), lambda L, F, x: x.clamp(max=0.0),
    lambda L, F, x: L.clamp_min(x, 1.0), lambda L, F, x: L.clamp_max(x, -1.0),
    lambda L, F, x: x.clamp(1.0, -1.0), lambda L, F, x: x.clamp(nan, 1.0),
    lambda L, F, x: x.clamp(-1.0, nan),
], ids=["relu", "F.relu", "abs", "sign", "clamp", "clamp_min0", "clamp_max0", "clamp_min",
        "clamp_max", "clamp_lo_gt_hi", "clamp_nan_lo", "clamp_nan_hi"])
def test_piecewise_unary_at_nan_zero_and_ties(op, dtype):
    check(op, PIECE, dtype=dtype)


def test_signed_zeros_match():
    # relu(-0) = -0 (clamp_min), |-0| = 0, sign(-0) = 0: as PyTorch
    x = np.array([-0.0, 0.0], F32)
    for fn in (lambda L, t: L.relu(t), lambda L, t: t.abs(), lambda L, t: t.sign()):
        got = fn(ng, ng.tensor(x)).numpy()
        want = fn(torch, torch.tensor(x)).numpy()
        assert np.array_equal(np.signbit(got), np.signbit(want))


A = [nan, 1.0, nan, 2.0, 3.0, -inf, inf, 0.0]
B = [1.0, nan, nan, 2.0, 1.0, -inf, 5.0, -0.0]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_nan_and_ties(op, dtype):
    check(lambda L, F, a, b: getattr(L, op)(a, b), A, B, dtype=dtype)
    check(lambda L, F, a: getattr(L, op)(a, a), A, dtype=dtype)  # both sides: 2g at nan
    check(lambda L, F, a, b: getattr(L, op)(a, b[:1]), A, B, dtype=dtype)  # broadcast


def test_clamp_tensor_bounds_propagate_nan():
    x = np.array([nan, 0.0, 1.0, 2.0, 0.0, -3.0], F32)
    lo = np.array([0.0, nan, 1.0, 0.0, 1.0, -1.0], F32)
    hi = np.array([1.0, 1.0, nan, 1.0, 0.0, 4.0], F32)
    got = ng.clamp(ng.tensor(x), ng.tensor(lo), ng.tensor(hi)).numpy()
    want = torch.clamp(torch.tensor(x), torch.tensor(lo), torch.tensor(hi)).numpy()
    np.testing.assert_array_equal(got, want)
    # gradient of x only (the bounds' rule when lo > hi is in ops/elementwise.py)
    check(lambda L, F, t: L.clamp(t, L.tensor(lo), L.tensor(hi)), x)


# ----------------------------------------------------------------------------------------
# smooth functions at extreme arguments
# ----------------------------------------------------------------------------------------

EXT32 = [nan, inf, -inf, 0.0, 1e-30, -1e-30, 1e30, -1e30, 15.0, 17.0, 20.0, 40.0, -15.0,
         -88.0, -89.0, -100.0, -104.0, 88.7, 89.0, 0.624, 0.626, 8.0, 9.0, -9.0]
EXT64 = EXT32 + [-700.0, -745.0, -746.0, 709.0, 710.0, 36.0, 38.0, 1e-300]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("op", ["sigmoid", "tanh", "exp"])
def test_smooth_unary_extremes(op, dtype):
    vals = EXT32 if dtype is F32 else EXT64
    check(lambda L, F, x: getattr(L, op)(x), vals, dtype=dtype, atol=1e-30)


BCE_X = [nan, inf, -inf, 100.0, -100.0, 1e30, -1e30, 0.0, 17.0, -17.0, 40.0, -40.0]
BCE_T = [1.0, 1.0, 1.0, 0.0, 0.0, 0.5, 0.5, 0.5, 1.0, 0.0, 0.3, 0.3]


def _bce_logits(pw):
    def f(L, F, a):
        kw = {} if pw is None else {"pos_weight": L.tensor(pw, dtype=a.dtype)}
        return F.binary_cross_entropy_with_logits(a, L.tensor(BCE_T, dtype=a.dtype),
                                                  reduction="none", **kw)
    return f


@pytest.mark.parametrize("dtype", [F32, F64])
def test_bce_with_logits_extremes(dtype):
    # f32: e^-17 is below float32's epsilon: log1p keeps it (the loss at 17 is 4.1e-8)
    check(_bce_logits(None), BCE_X, dtype=dtype, atol=1e-30)
    check(_bce_logits(3.0), BCE_X, dtype=dtype, atol=1e-30, grads=False)


def test_bce_with_logits_pos_weight_gradient_extremes():
    check(_bce_logits(3.0), BCE_X, dtype=F32, atol=1e-30)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_mean_whose_sum_overflows(dtype):
    big = np.finfo(dtype).max / 1.5
    check(lambda L, F, x: x.mean(), [big, big], dtype=dtype)
    check(lambda L, F, x: x.mean(0), [[big, 1.0], [big, 2.0]], dtype=dtype)
    check(lambda L, F, x: x.mean(1), [[big, big, big], [1.0, 2.0, 3.0]], dtype=dtype)
    check(lambda L, F, x: x.sum(), [big, big], dtype=dtype)


# ----------------------------------------------------------------------------------------
# softplus: its kernels, and F.softplus (its gradient at exactly 0 is 1/2)
# ----------------------------------------------------------------------------------------

SOFTPLUS_X = [0.0, -0.0, 1.0, -1.0, 19.9, 20.0, 20.1, 30.0, -30.0, 80.0, -100.0, 1e-8, -1e-8,
              1e30, -1e30, inf, -inf, nan, 2.4, 2.6, 3.0, -3.0]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 5.0), (0.5, 100.0)])
def test_softplus_kernels_match_pytorch(beta, threshold, dtype):
    x = np.array(SOFTPLUS_X, dtype)
    t = torch.tensor(x, requires_grad=True)
    ref = TF.softplus(t, beta, threshold)
    g = np.random.default_rng(0).uniform(0.5, 1.5, x.shape).astype(dtype)
    ref.backward(torch.tensor(g))
    got = EW.unary(EW.softplus, x, dtype, beta, threshold)
    got_g = EW.binary(EW.softplus_bwd, g, x, dtype, x.shape, beta, threshold)
    np.testing.assert_allclose(got, ref.detach().numpy(), rtol=1e-6, atol=1e-35, equal_nan=True)
    np.testing.assert_allclose(got_g, t.grad.numpy(), rtol=1e-6, atol=1e-35, equal_nan=True)
    assert got_g[0] == pytest.approx(0.5 * g[0])  # the "Trust" issue: 0 at exactly 0


def test_softplus_kernel_beyond_exp_overflow():
    # where beta x <= threshold but e^(beta x) overflows, PyTorch gives inf (value) and nan
    # (gradient); the kernels give the limits x and 1
    x = np.array([100.0, 700.0], F32)
    np.testing.assert_array_equal(EW.unary(EW.softplus, x, F32, 1.0, 1e9), x)
    np.testing.assert_array_equal(EW.binary(EW.softplus_bwd, np.ones(2, F32), x, F32, (2,),
                                            1.0, 1e9), [1.0, 1.0])


def test_functional_softplus_matches_pytorch():
    check(lambda L, F, x: F.softplus(x), SOFTPLUS_X[:13])
    check(lambda L, F, x: F.softplus(x, beta=2.0, threshold=5.0), SOFTPLUS_X[:13])


# ----------------------------------------------------------------------------------------
# kernel level: the row and 3-D softmax kernels agree, and logsumexp's nan rule
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, F64])
def test_row_and_3d_softmax_kernels_agree_on_special_rows(dtype):
    rows = np.array([[1e20, 1e20, 0.0], [nan, 1.0, 2.0], [-inf, -inf, -inf], [0.0, 0.0, 0.0],
                                [inf, 1.0, 2.0], [3e38, 3e38, 1.0]], dtype)
    for log in (False, True):
        a = np.empty_like(rows)
        b = np.empty_like(rows)
        RED.softmax_rows(rows, a, log)
        RED.softmax_3d(rows[:, :, None], b[:, :, None], log)
        np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True)


def test_logsumexp_kernel_any_nan_gives_nan():
    x = np.array([[inf, nan, 1.0], [nan, inf, 1.0], [1.0, 2.0, nan], [-inf, nan, -inf]], F32)
    out = np.empty((4, 1), F32)
    RED.logsumexp_3d(x[:, :, None], out)
    assert np.isnan(out).all()


def test_softplus_module_and_node_match_pytorch():
    check(lambda L, F, x: L.nn.Softplus(beta=2.0, threshold=5.0)(x), SOFTPLUS_X[:13])
    x = ng.tensor([0.0, 1.0], requires_grad=True)
    y = ng.nn.functional.softplus(x)
    assert type(y.grad_fn).__name__ == "SoftplusBackward0"
    assert repr(ng.nn.Softplus(2.0)) == repr(torch.nn.Softplus(2.0))
    # create_graph: the second derivative sigmoid'(x) = s (1 - s), 1/4 at 0
    (g,) = ng.autograd.grad(y.sum(), x, create_graph=True)
    (h,) = ng.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), [0.25, 0.19661193], rtol=1e-6)
