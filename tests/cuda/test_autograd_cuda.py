"""Autograd machinery on CUDA tensors: custom Functions, hooks, autograd.grad and the
functional API, retain_graph and create_graph."""

import numpy as np

import numgrad as ng


class Cube(ng.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class TwoOut(ng.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, ga, gb):  # gb arrives as zeros (materialized) when the output is unused
        return ga * 2 + gb * 3


def test_custom_function_on_cuda():
    x = ng.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    y = Cube.apply(x)
    assert y.is_cuda and type(y.grad_fn).__name__ == "CubeBackward"
    y.sum().backward()
    assert x.grad.is_cuda and x.grad.tolist() == [3.0, 12.0]
    z = ng.tensor([1.0], device="cuda", requires_grad=True)
    a, _ = TwoOut.apply(z)
    a.sum().backward()
    assert z.grad.tolist() == [2.0]


def test_hooks_retain_graph_and_autograd_grad_on_cuda():
    x = ng.tensor([1.0, -2.0, 3.0], device="cuda", requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.is_cuda))
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert seen == [True, True] and x.grad.tolist() == [4.0, -8.0, 12.0]
    (g,) = ng.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (gg,) = ng.autograd.grad(g.sum(), x)
    assert gg.is_cuda and gg.tolist() == [6.0, -12.0, 18.0]
    v = ng.ones(3, device="cuda")
    (x * 2).backward(v)
    assert x.grad.tolist() == [6.0, -6.0, 14.0]


def test_functional_jacobian_and_hessian_on_cuda():
    x = ng.tensor([0.5, -1.0], device="cuda")
    jac = ng.autograd.functional.jacobian(lambda t: t.exp() * t, x)
    hes = ng.autograd.functional.hessian(lambda t: (t ** 3).sum(), x)
    jc = ng.autograd.functional.jacobian(lambda t: t.exp() * t, x.cpu())
    assert jac.is_cuda and hes.is_cuda
    np.testing.assert_allclose(jac.cpu().numpy(), jc.numpy(), rtol=1e-6)
    np.testing.assert_allclose(hes.cpu().numpy(), np.diag([3.0, -6.0]), rtol=1e-6)


def test_no_grad_and_inplace_version_checks_on_cuda():
    x = ng.ones(3, device="cuda", requires_grad=True)
    with ng.no_grad():
        y = x * 2
    assert not y.requires_grad and y.is_cuda
    z = x.sigmoid()
    z.mul_(2)
    try:
        z.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
    else:
        raise AssertionError("expected the version-counter error")
