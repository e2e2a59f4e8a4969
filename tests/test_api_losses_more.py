"""Losses vs PyTorch: BCE target gradients and weight refusals, and the extra losses and
distances of numgrad/nn/_losses_more.py (values, input and target gradients, nodes, errors)."""

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

R = np.random.default_rng(7)


def _pair(arrs, rg):
    """The same arrays as torch and numgrad tensors (float64), some requiring grad."""
    tt = [None if a is None else torch.tensor(a, requires_grad=r) for a, r in zip(arrs, rg)]
    nn_ = [None if a is None else ng.tensor(a, requires_grad=r) for a, r in zip(arrs, rg)]
    return tt, nn_


def _compare(fn_t, fn_n, arrs, rg, node=True):
    """Value, node name and every leaf's gradient of fn over the same inputs."""
    tt, nt = _pair(arrs, rg)
    lt, ln = fn_t(*tt), fn_n(*nt)
    np.testing.assert_allclose(ln.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    if not any(rg):
        return
    if node:
        assert type(ln.grad_fn).__name__ == type(lt.grad_fn).__name__
    gt = torch.linspace(0.5, 1.5, lt.numel(), dtype=lt.dtype).reshape(lt.shape)
    lt.backward(gt)
    ln.backward(ng.tensor(gt.numpy()))
    for a, b in zip(tt, nt):
        if a is not None and a.requires_grad:
            if a.grad is None:
                assert b.grad is None
            else:
                np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-9, atol=1e-12)


def _raises_like(fn_t, fn_n, targs, nargs):
    with pytest.raises(Exception) as et:
        fn_t(*targs)
    with pytest.raises(type(et.value)) as en:
        fn_n(*nargs)
    assert str(en.value) == str(et.value)


# ---- binary_cross_entropy(_with_logits): the target's gradient, weight refusals ----

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rg", [(False, True), (True, True)])
def test_bce_with_logits_target_gradient(reduction, rg):
    x, t = R.standard_normal((2, 3)), R.uniform(0, 1, (2, 3))
    w, pw = R.uniform(0.5, 2, (3,)), R.uniform(0.5, 2, (2, 3))
    for lib_w in ((None, None), (w, None), (w, pw)):
        def f(lib):
            def run(a, b, c, d):
                return lib.nn.functional.binary_cross_entropy_with_logits(
                    a, b, weight=c, pos_weight=d, reduction=reduction)
            return run
        _compare(f(torch), f(ng), (x, t) + lib_w, rg + (False, False))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rg", [(False, True), (True, True)])
def test_bce_target_gradient(reduction, rg):
    p, t, w = R.uniform(0.05, 0.95, (2, 3)), R.uniform(0, 1, (2, 3)), R.uniform(0.5, 2, (3,))
    for ww in (None, w):
        def f(lib):
            def run(a, b, c):
                return lib.nn.functional.binary_cross_entropy(a, b, weight=c, reduction=reduction)
            return run
        _compare(f(torch), f(ng), (p, t, ww), rg + (False,))


def test_bce_target_gradcheck_and_double_backward():
    x = ng.tensor(R.standard_normal((2, 3)), requires_grad=True)
    p = ng.tensor(R.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    t = ng.tensor(R.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    pw, w = ng.tensor(R.uniform(0.5, 2, (3,))), ng.tensor(R.uniform(0.5, 2, (2, 3)))
    F = ng.nn.functional
    assert ng.autograd.gradcheck(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, w, pos_weight=pw), (x, t))
    assert ng.autograd.gradgradcheck(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, w, pos_weight=pw), (x, t))
    assert ng.autograd.gradcheck(lambda a, b: F.binary_cross_entropy(a, b, w), (p, t))
    assert ng.autograd.gradgradcheck(lambda a, b: F.binary_cross_entropy(a, b, w), (p, t))


@pytest.mark.parametrize("case", ["bcel_w", "bcel_pw", "bce_w", "nll_w", "ce_w"])
def test_non_differentiable_weights_refused(case):
    x, t = R.standard_normal((2, 3)), R.uniform(0, 1, (2, 3))
    idx = np.array([0, 2])

    def call(lib, grad_mode=True):
        F = lib.nn.functional
        w = lib.tensor(R.uniform(0.5, 2, (3,)), requires_grad=True)
        xt, tt = lib.tensor(x), lib.tensor(t)
        with lib.set_grad_enabled(grad_mode):
            if case == "bcel_w":
                return F.binary_cross_entropy_with_logits(xt, tt, weight=w)
            if case == "bcel_pw":
                return F.binary_cross_entropy_with_logits(xt, tt, pos_weight=w)
            if case == "bce_w":
                return F.binary_cross_entropy(lib.sigmoid(xt), tt, weight=w)
            if case == "nll_w":
                return F.nll_loss(xt, lib.tensor(idx), weight=w)
            return F.cross_entropy(xt, lib.tensor(idx), weight=w)
    _raises_like(call, call, (torch,), (ng,))
    call(ng, grad_mode=False)  # no_grad: accepted, as in PyTorch
    call(torch, grad_mode=False)
