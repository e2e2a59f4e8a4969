"""The five seed tutorials (../shared/seeds), one test each: the tutorial's code runs with
``t = numgrad`` and ``t = torch`` from the same seed and must print the same text (object
addresses aside; ``dir()`` listings, which the tutorials print only to browse, are skipped).
Without PyTorch, the printed numbers are checked against the values the tutorials derive."""

import re

import numpy as np
import pytest
from conftest import torch

import numgrad as ng

ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


class Out:
    def __init__(self):
        self.lines = []

    def __call__(self, *args):
        self.lines.append(ADDRESS.sub("0x?", " ".join(str(a) for a in args)))


def run(tutorial, m, seed=0):
    m.manual_seed(seed)
    out = Out()
    tutorial(m, out)
    return out.lines


def compare(tutorial):
    ours = run(tutorial, ng)
    if torch is not None:
        theirs = run(tutorial, torch)
        assert ours == theirs
    return ours


# ----------------------------------------------------------------------------- seed 000


def seed_000(t, print):
    Function = t.autograd.function.Function
    x = t.rand(5, 5, requires_grad=True)
    y = t.rand(5, 5, requires_grad=True)
    z = t.sum(x + y)
    z.backward()
    print(x.grad)
    print(y.grad)

    x = t.rand(5, 5, requires_grad=True)
    y = t.rand(5, 5, requires_grad=True)
    z = x ** 2 + y ** 3
    z.backward(t.ones_like(x))
    print(x.grad)

    print("x.is_leaf=" + str(x.is_leaf))
    print("z.is_leaf=" + str(z.is_leaf))
    print(z.grad_fn.next_functions)
    xg = z.grad_fn.next_functions[0][0]
    x_leaf = xg.next_functions[0][0]
    print(type(x_leaf))
    print(x_leaf.variable)
    assert id(x_leaf.variable) == id(x)

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None

    a = t.rand(3, 3, requires_grad=True)
    b = MulConstant.apply(a, 5)
    print("a:" + str(a))
    print("b:" + str(b))
    b.backward(t.ones_like(a))
    print(a.grad)


def test_seed_000_backward_and_graph():
    lines = compare(seed_000)
    assert lines[0] == lines[1] == "tensor(" + str(ng.ones(5, 5))[7:]
    assert lines[-3].startswith("a:tensor(") and "grad_fn=<MulConstantBackward>" in lines[-2]
    assert lines[-1] == str(ng.ones(3, 3))
    assert lines[6] == "<class 'AccumulateGrad'>"


# ----------------------------------------------------------------------------- seed 001


def seed_001(t, print):
    Function = t.autograd.Function
    a = t.randn(3, 4, requires_grad=True)
    a = t.randn(3, 4).requires_grad_()
    a = t.randn(3, 4)
    a.requires_grad = True
    print(a)

    a = t.randn(3, 4, requires_grad=True)
    b = t.zeros(3, 4).requires_grad_()
    c = a + b
    d = c.sum()
    d.backward()
    print(d, d.requires_grad)
    print(a.grad)
    print(a.requires_grad, b.requires_grad, c.requires_grad)
    print(a.is_leaf, b.is_leaf, c.is_leaf)

    def f(x):
        return x ** 2 * t.exp(x)

    def gradf(x):
        return 2 * x * t.exp(x) + x ** 2 * t.exp(x)

    x = t.randn(3, 4, requires_grad=True)
    y = f(x)
    print(y)
    print(gradf(x))
    y.backward(t.ones(y.size()))
    print(x.grad)

    x = t.ones(3, requires_grad=True)
    w = t.rand(3, requires_grad=True)
    y = x * w
    z = y.sum()
    print(t.autograd.grad(z, y))
    print(t.autograd.grad(z, x))

    def variable_hook(grad):
        print("y的梯度：", grad)

    x = t.ones(3, requires_grad=True)
    w = t.rand(3, requires_grad=True)
    y = x * w
    hook_handle = y.register_hook(variable_hook)
    z = y.sum()
    z.backward()
    hook_handle.remove()

    class Mul(Function):
        @staticmethod
        def forward(ctx, w, x, b, x_requires_grad=True):
            ctx.x_requires_grad = x_requires_grad
            ctx.save_for_backward(w, x)
            return w * x + b

        @staticmethod
        def backward(ctx, grad_output):
            w, x = ctx.saved_tensors
            grad_w = grad_output * x
            grad_x = grad_output * w if ctx.x_requires_grad else None
            grad_b = grad_output * 1
            return grad_w, grad_x, grad_b, None

    w = t.rand(3, requires_grad=True)
    x = t.rand(3, requires_grad=True)
    b = t.rand(3, requires_grad=True)
    out = Mul.apply(w, x, b, False)
    out.sum().backward()
    print(out, w.grad, x.grad, b.grad)


def test_seed_001_autograd_grad_hooks_function():
    lines = compare(seed_001)
    assert lines[1] == lines[1].split(",")[0] + ", grad_fn=<SumBackward0>) True"
    assert lines[2] == str(ng.ones(3, 4))
    assert lines[3] == "True True True" and lines[4] == "True True False"
    assert lines[7] == lines[6].replace(",\n       grad_fn=<AddBackward0>", "").replace(
        ", grad_fn=<AddBackward0>", "")  # the manual gradient prints as autograd's
    assert any(line.startswith("y的梯度： tensor([1., 1., 1.])") for line in lines)
    assert lines[-1].endswith("None tensor([1., 1., 1.])")


def test_seed_001_manual_gradient_equals_autograd():
    ng.manual_seed(0)
    x = ng.randn(3, 4, requires_grad=True)
    y = x ** 2 * ng.exp(x)
    y.backward(ng.ones(y.size()))
    manual = (2 * x * ng.exp(x) + x ** 2 * ng.exp(x)).detach()
    np.testing.assert_allclose(x.grad.numpy(), manual.numpy(), rtol=1e-6)


# ----------------------------------------------------------------------------- seed 002


def seed_002(t, print):
    Function = t.autograd.function.Function
    x = t.rand(5, 5, requires_grad=True)
    print(x)
    y = t.rand(5, 5, requires_grad=True)
    print(y)
    z = t.sum(x + y)
    print(z)
    z.backward()
    print(x.grad, "\n", y.grad)

    x = t.rand(5, 5, requires_grad=True)
    y = t.rand(5, 5, requires_grad=True)
    z = x ** 2 + y ** 3
    print(z)
    z.backward(t.ones_like(x))
    print(x.grad)
    with t.no_grad():
        print((x + y * 2).requires_grad)

    print("x.is_leaf=" + str(x.is_leaf))
    print("z.is_leaf=" + str(z.is_leaf))
    print(z.grad_fn)
    print(z.grad_fn.next_functions)
    xg = z.grad_fn.next_functions[0][0]
    x_leaf = xg.next_functions[0][0]
    print(type(x_leaf))
    print(x_leaf.variable)
    print(id(x_leaf.variable) == id(x))

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    a = t.rand(3, 3, requires_grad=True)
    b = MulConstant.apply(a, 5)
    print("a:" + str(a))
    print("b:" + str(b))
    b.backward(t.ones_like(a))
    print(a.grad)


def test_seed_002_walkthrough():
    lines = compare(seed_002)
    assert lines[2].endswith("grad_fn=<SumBackward0>)")
    assert "False" in lines
    assert "<AddBackward0 object at 0x?>" in lines
    assert "((<PowBackward0 object at 0x?>, 0), (<PowBackward0 object at 0x?>, 0))" in lines
    assert lines[-1] == str(ng.full((3, 3), 5.0))


# ----------------------------------------------------------------------------- seed 003


def seed_003(t, print):
    Function = t.autograd.function.Function
    x = t.ones(2, 2, requires_grad=True)
    print(x)
    y = x + 2
    print(y)
    print(y.grad_fn)
    z = y * y * 3
    out = z.mean()
    print(z, out)
    a = t.randn(2, 2)
    a = ((a * 3) / (a - 1))
    print(a.requires_grad)
    a.requires_grad_(True)
    print(a.requires_grad)
    b = (a * a).sum()
    print(b.grad_fn)
    out.backward()
    print(x.grad)

    x = t.randn(3, requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    print(y)
    gradients = t.tensor([0.1, 1.0, 0.0001], dtype=t.float)
    y.backward(gradients)
    print(x.grad)
    print(x.requires_grad)
    print((x ** 2).requires_grad)
    with t.no_grad():
        print((x ** 2).requires_grad)

    x = t.rand(5, 5, requires_grad=True)
    y = t.rand(5, 5, requires_grad=True)
    z = t.sum(x + y)
    print(z)
    z.backward()
    print(x.grad, y.grad)
    z = x ** 2 + y ** 3
    print(z)
    print(z.grad_fn.next_functions)
    xg = z.grad_fn.next_functions[0][0]
    print(xg.next_functions)

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None

    a = t.rand(3, 3, requires_grad=True)
    b = MulConstant.apply(a, 5)
    print("a:" + str(a))
    print("b:" + str(b))
    b.backward(t.ones_like(a))
    print(a.grad)


def test_seed_003_notebook():
    lines = compare(seed_003)
    assert lines[:4] == [
        "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)",
        "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)",
        "<AddBackward0 object at 0x?>",
        "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>) "
        "tensor(27., grad_fn=<MeanBackward0>)"]
    assert lines[4:8] == ["False", "True", "<SumBackward0 object at 0x?>",
                          "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"]
    assert lines[10:13] == ["True", "True", "False"]


def test_seed_003_gradient_scaling():
    """y = x * 2^k with k chosen by the loop: x.grad = gradients * 2^k."""
    ng.manual_seed(0)
    x = ng.randn(3, requires_grad=True)
    y = x * 2
    k = 1
    while y.data.norm() < 1000:
        y = y * 2
        k += 1
    g = ng.tensor([0.1, 1.0, 0.0001])
    y.backward(g)
    np.testing.assert_allclose(x.grad.numpy(), g.numpy() * 2.0 ** k, rtol=1e-6)


# ----------------------------------------------------------------------------- seed 004


def seed_004(t, print):
    x = t.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    print(x)
    print(y)
    print(z)
    print(out)
    out.backward()
    print(x.grad)

    x = t.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    gradients = t.tensor([[0.1, 1.0], [1.0, 1.0]], dtype=t.float)
    z.backward(gradients, retain_graph=True)
    print(x.grad)
    out.backward()
    print(x.grad)
    x.grad = None
    print(x.grad)


def test_seed_004_retain_graph():
    lines = compare(seed_004)
    assert lines == [
        "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)",
        "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)",
        "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>)",
        "tensor(27., grad_fn=<MeanBackward0>)",
        "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])",
        "tensor([[ 1.8000, 18.0000],\n        [18.0000, 18.0000]])",
        "tensor([[ 6.3000, 22.5000],\n        [22.5000, 22.5000]])",
        "None",
    ]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_seed_texts_print_pytorch_numbers_for_same_seed():
    """With the same seed, numgrad's random tensors are PyTorch's (MT19937 stream)."""
    for m in (ng, torch):
        m.manual_seed(0)
    assert repr(ng.rand(5, 5, requires_grad=True)) == repr(torch.rand(5, 5, requires_grad=True))
