"""Custom ``autograd.Function``: ctx, saved tensors, non-tensor inputs, node names, errors."""

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng


def make_functions(m):
    Function = m.autograd.Function

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    class WrongShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return m.ones(3)

    class GradForNumber(Function):
        @staticmethod
        def forward(ctx, x, c):
            return x * c

        @staticmethod
        def backward(ctx, g):
            return g, g

    class SplitTwo(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb * 3

    return MulConstant, Exp, TooMany, WrongShape, GradForNumber, SplitTwo


def test_mul_constant_node_and_gradient():
    MulConstant, *_ = make_functions(ng)
    a = ng.rand(3, 3, requires_grad=True)
    b = MulConstant.apply(a, 5)
    assert type(b.grad_fn).__name__ == "MulConstantBackward"
    assert "grad_fn=<MulConstantBackward>" in str(b)
    assert b.grad_fn.next_functions[0][0].variable is a
    assert len(b.grad_fn.next_functions) == 1
    assert b.grad_fn.needs_input_grad == (True, False)
    assert b.grad_fn.constant == 5
    b.backward(ng.ones_like(a))
    assert_close(a.grad, np.full((3, 3), 5.0, np.float32))


def test_saved_tensors_and_freed_error():
    _, Exp, *_ = make_functions(ng)
    x = ng.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    y.sum().backward()
    assert_close(x.grad, np.exp([0.0, 1.0]).astype(np.float32))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn.saved_tensors  # noqa: B018


def test_save_for_backward_rejects_numbers():
    class Bad(ng.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2
    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument "
                                        "1 is of type int"):
        Bad.apply(ng.ones(2, requires_grad=True))


def test_multiple_outputs():
    *_, SplitTwo = make_functions(ng)
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    a, b = SplitTwo.apply(x)
    assert a.grad_fn is b.grad_fn and a.output_nr == 0 and b.output_nr == 1
    (a.sum() + b.sum()).backward()
    assert_close(x.grad, np.full(2, 5.0, np.float32))
    x.grad = None
    a, b = SplitTwo.apply(x)
    a.sum().backward()  # b's gradient is materialized as zeros
    assert_close(x.grad, np.full(2, 2.0, np.float32))


def test_no_graph_without_grad():
    MulConstant, *_ = make_functions(ng)
    y = MulConstant.apply(ng.ones(2), 3)
    assert y.grad_fn is None and not y.requires_grad
    with ng.no_grad():
        z = MulConstant.apply(ng.ones(2, requires_grad=True), 3)
    assert z.grad_fn is None


def test_importable_as_in_tutorials():
    from numgrad.autograd import Function as F1
    from numgrad.autograd.function import Function as F2
    assert F1 is F2


@requires_torch
@pytest.mark.parametrize("index", [2, 3, 4])
def test_errors_match_pytorch(index):
    ours = make_functions(ng)[index]
    theirs = make_functions(torch)[index]
    args = (3,) if index == 4 else ()

    def err(m, cls):
        x = m.ones(3, 3, requires_grad=True)
        try:
            cls.apply(x, *args).sum().backward()
        except Exception as e:  # noqa: BLE001
            return type(e), str(e)
    assert err(ng, ours) == err(torch, theirs)


@requires_torch
def test_gradients_match_pytorch():
    def run(m):
        MulConstant, Exp, *_ = make_functions(m)
        m.manual_seed(1)
        x = m.rand(4, requires_grad=True)
        y = Exp.apply(MulConstant.apply(x, 2.5)).sum()
        y.backward()
        return y, x.grad
    for a, b in zip(run(ng), run(torch)):
        assert_close(a, b)
