"""atan2 (arctan2) and copysign against PyTorch: dtypes (integers compute as floats), the
number forms, node names, gradients where copysign's input is 0 or -0.0, in-place forms and
the errors. Values, gradients and the rest of the op table: op_cases.py rows."""

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

A = [1.0, -0.0, 0.0, -2.0, 3.5, float("inf"), float("nan")]
B = [-1.0, 1.0, -1.0, 0.0, -0.0, 2.0, -3.0]


def _both(values, dtype):
    return ng.tensor(values, dtype=getattr(ng, dtype)), torch.tensor(values,
                                                                      dtype=getattr(torch, dtype))


def _same(x, t):
    assert str(x.dtype) == str(t.dtype)
    np.testing.assert_array_equal(x.detach().numpy(), t.detach().numpy())
    assert (np.signbit(x.detach().numpy()) == np.signbit(t.detach().numpy())).all()


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float64", "float32"),
                                   ("int64", "int64"), ("int32", "float64"), ("bool", "bool"),
                                   ("uint8", "int16")])
@pytest.mark.parametrize("op", ["atan2", "arctan2", "copysign"])
def test_values_and_dtypes(op, da, db):
    conv = float if "float" in da else (bool if da == "bool" else lambda v: int(v) % 3)
    convb = float if "float" in db else (bool if db == "bool" else lambda v: int(v) % 3 - 1)
    vals_a = [conv(v) for v in A if "float" in da or np.isfinite(v)]
    vals_b = [convb(v) for v in B][:len(vals_a)]
    xa, ta = _both(vals_a, da)
    xb, tb = _both(vals_b, db)
    _same(getattr(ng, op)(xa, xb), getattr(torch, op)(ta, tb))
    _same(getattr(xa, op)(xb), getattr(ta, op)(tb))


@pytest.mark.parametrize("s", [-1, 2.5, -0.0, 0.0, True])
def test_copysign_number(s):
    for dt in ("float32", "int64"):
        xa, ta = _both([1, 0, 3], dt)
        _same(ng.copysign(xa, s), torch.copysign(ta, s))


def test_gradients_and_nodes_at_zero():
    for other in (B, -1.0, -0.0, 0.0):
        a = ng.tensor(A, dtype=ng.float64, requires_grad=True)
        ta = torch.tensor(A, dtype=torch.float64, requires_grad=True)
        if isinstance(other, list):
            b = ng.tensor(other, dtype=ng.float64, requires_grad=True)
            tb = torch.tensor(other, dtype=torch.float64, requires_grad=True)
        else:
            b, tb = other, other
        y, ty = ng.copysign(a, b), torch.copysign(ta, tb)
        assert y.grad_fn.name() == ty.grad_fn.name()
        g = [0.5, 1.0, -2.0, 3.0, 1.0, 1.0, 1.0]
        y.backward(ng.tensor(g, dtype=ng.float64))
        ty.backward(torch.tensor(g, dtype=torch.float64))
        _same(a.grad, ta.grad)
        if isinstance(other, list):
            _same(b.grad, tb.grad)
    a = ng.tensor([[0.3, -1.2]], requires_grad=True)
    b = ng.tensor([[2.0], [-0.5]], requires_grad=True)
    ta = torch.tensor([[0.3, -1.2]], requires_grad=True)
    tb = torch.tensor([[2.0], [-0.5]], requires_grad=True)
    y, ty = ng.atan2(a, b), torch.atan2(ta, tb)
    assert y.grad_fn.name() == ty.grad_fn.name() == "Atan2Backward0"
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)


def test_in_place_and_errors():
    for op in ("atan2_", "arctan2_", "copysign_"):
        x = ng.tensor([1.0, -2.0])
        t = torch.tensor([1.0, -2.0])
        getattr(x, op)(ng.tensor([-1.0, 3.0]))
        getattr(t, op)(torch.tensor([-1.0, 3.0]))
        _same(x, t)
        xi, ti = ng.tensor([1, 2]), torch.tensor([1, 2])
        for args in (([ng.tensor([1.0, 2.0])], [torch.tensor([1.0, 2.0])]),
                     ([ng.tensor([1, 2])], [torch.tensor([1, 2])])):
            with pytest.raises(RuntimeError) as ours:
                getattr(xi, op)(*args[0])
            with pytest.raises(RuntimeError) as theirs:
                getattr(ti, op)(*args[1])
            assert str(ours.value) == str(theirs.value)
    for f, tf in ((lambda: ng.atan2(ng.tensor([1.0]), 2.0),
                   lambda: torch.atan2(torch.tensor([1.0]), 2.0)),
                  (lambda: ng.atan2(2.0, ng.tensor([1.0])),
                   lambda: torch.atan2(2.0, torch.tensor([1.0]))),
                  (lambda: ng.copysign(2.0, ng.tensor([1.0])),
                   lambda: torch.copysign(2.0, torch.tensor([1.0])))):
        with pytest.raises(TypeError) as ours:
            f()
        with pytest.raises(TypeError) as theirs:
            tf()
        assert str(ours.value).split(" - ")[0] == str(theirs.value).split(" - ")[0]
