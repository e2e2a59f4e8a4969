"""numgrad.autograd.forward_ad (dual numbers) against PyTorch's forward-mode AD: tangents of
elementwise, broadcasting, matmul, reduction, view and nn ops, the level rules, and the
errors (class and message)."""

import numpy as np
import pytest
from conftest import raised

import numgrad as ng

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X = RNG.uniform(0.2, 1.5, (2, 3))
TX = RNG.standard_normal((2, 3))
W = RNG.standard_normal((3, 4))
TW = RNG.standard_normal((3, 4))

UNARY = ["exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "relu", "abs", "neg",
         "reciprocal", "rsqrt", "log1p", "expm1", "erf", "square"]


def _tangent(T, fn, inputs):
    """``fn``'s value and tangent at dual ``inputs`` [(primal, tangent) arrays]."""
    import importlib
    fwad = importlib.import_module(f"{T.__name__}.autograd.forward_ad")
    with fwad.dual_level():
        duals = [fwad.make_dual(T.tensor(p), T.tensor(t)) for p, t in inputs]
        out = fn(T, *duals)
        primal, tangent = fwad.unpack_dual(out)
        assert isinstance(fwad.unpack_dual(out), fwad.UnpackedDualTensor)
        return primal.detach().numpy(), None if tangent is None else tangent.numpy()


def _check(fn, inputs):
    (p1, t1), (p2, t2) = (_tangent(T, fn, inputs) for T in (ng, torch))
    np.testing.assert_allclose(p1, p2, rtol=1e-10, atol=1e-12)
    assert (t1 is None) == (t2 is None)
    if t1 is not None:
        np.testing.assert_allclose(t1, t2, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops(name):
    _check(lambda T, x: getattr(x, name)(), [(X, TX)])


@pytest.mark.parametrize("case", [
    lambda T, x, w: x @ w,
    lambda T, x, w: (x.unsqueeze(-1) * w).sum(1),  # broadcasting
    lambda T, x, w: x.pow(3) / (x.t() @ x).mean(),
    lambda T, x, w: x.clamp(0.5, 1.2) * x.exp() - x.max(),
    lambda T, x, w: x.reshape(3, 2).transpose(0, 1)[:, 1:] ** 2,
    lambda T, x, w: T.cat([x, x * x], 1).view(-1).cumsum(0),
    lambda T, x, w: (x @ w).softmax(-1),
    lambda T, x, w: T.nn.functional.log_softmax(x @ w, 1),
    lambda T, x, w: T.nn.functional.linear(x, w.t(), w[0]),
    lambda T, x, w: T.nn.functional.layer_norm(x @ w, (4,)),
    lambda T, x, w: T.nn.functional.cross_entropy(x @ w, T.tensor([1, 3])),
    lambda T, x, w: T.nn.functional.gelu(x) * T.nn.functional.softplus(w[:2, :3]),
    lambda T, x, w: (x[0] * 0).sum() + 5,
], ids=range(13))
def test_composite_functions(case):
    _check(case, [(X, TX), (W, TW)])


def test_only_some_inputs_dual_and_independent_outputs():
    def fn(T, x):
        c = T.tensor(W)
        return (x @ c).tanh()
    _check(fn, [(X, TX)])
    _check(lambda T, x: T.ones(3) * 2, [(X, TX)])  # no tangent


def test_dual_of_requires_grad_primal_stays_differentiable():
    import numgrad.autograd.forward_ad as fwad
    x = ng.tensor(X, requires_grad=True)
    with fwad.dual_level():
        y = fwad.make_dual(x, ng.tensor(TX)).sin()
        p, t = fwad.unpack_dual(y)
        p.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(X))
    np.testing.assert_allclose(t.detach().numpy(), np.cos(X) * TX)


def test_levels_and_errors():
    def cases(T):
        import importlib
        fwad = importlib.import_module(f"{T.__name__}.autograd.forward_ad")
        x = T.tensor(X)
        out = [raised(fwad.make_dual, x, x)]  # outside a level
        with fwad.dual_level() as level:
            out.append(level)
            out.append(raised(fwad.make_dual, x, T.ones(2)))
            out.append(raised(fwad.make_dual, T.arange(3), T.ones(3)))
            out.append(raised(fwad.make_dual, x, T.ones(2, 3, dtype=T.int64)))
            out.append(raised(fwad.enter_dual_level))
            d = fwad.make_dual(x, T.tensor(TX))
            out.append(fwad.unpack_dual(x).tangent is None)
            out.append(fwad.unpack_dual(d).tangent.tolist())
            y = d * 2
        out.append(fwad.unpack_dual(y).tangent is None)  # tangents end with the level
        out.append(raised(fwad.exit_dual_level))
        return out
    assert cases(ng) == cases(torch)


def test_once_differentiable_backward_raises_instead_of_a_wrong_tangent():
    import numgrad.autograd.forward_ad as fwad

    class Square(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @ng.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    with fwad.dual_level():
        d = fwad.make_dual(ng.tensor(X), ng.tensor(TX))
        with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
            fwad.unpack_dual(Square.apply(d))


def test_forward_ad_is_reachable_as_an_attribute():
    assert ng.autograd.forward_ad.dual_level is not None


def test_tangents_propagate_under_no_grad():
    """Forward AD ignores grad mode (PyTorch): ops under no_grad on dual tensors keep their
    tangents; ops on other tensors under no_grad stay unrecorded; leaving the level unwraps."""
    from numgrad import _intercept

    def fn(T, x, w):
        with T.no_grad():
            y = (x * x).sin() @ w
            z = T.nn.functional.linear(y, w, w[:, 0]).tanh()
        return z.exp() * x.sum()
    _check(fn, [(X, TX), (W, TW)])
    _check(lambda T, x: T.no_grad()(lambda: x.cos().sum(0) - x[1])(), [(X, TX)])
    p = ng.ones(2, requires_grad=True)
    with ng.autograd.forward_ad.dual_level():
        d = ng.autograd.forward_ad.make_dual(ng.ones(2), ng.ones(2))
        assert not _intercept.active()  # nothing wrapped until grad mode turns off
        with ng.no_grad():
            q = p * 2
            e = d + p
        assert _intercept.active()
        assert not q.requires_grad and q.grad_fn is None
        assert ng.autograd.forward_ad.unpack_dual(e).tangent.tolist() == [1.0, 1.0]
    assert not _intercept.active()
    for T in (ng, torch):  # a level under no_grad propagates, under inference_mode not
        fwad = T.autograd.forward_ad
        with T.no_grad(), fwad.dual_level():
            d = fwad.make_dual(T.ones(2), T.full((2,), 3.0))
            assert fwad.unpack_dual((d * d).sum()).tangent.item() == 12.0
        with fwad.dual_level():
            d = fwad.make_dual(T.ones(2), T.full((2,), 3.0))
            with T.inference_mode():
                assert fwad.unpack_dual((d * d).sum()).tangent is None
    assert not _intercept.active() and not ng.autograd.grad_mode.ON_DISABLE
