"""The activations of ``numgrad.nn`` / ``numgrad.nn.functional`` (elu, celu, selu, glu,
hard*, relu6, logsigmoid, mish, prelu, rrelu, softmin, soft*, tanhshrink, threshold and their
in-place forms) against PyTorch: module ``repr``, values, gradients and node names in float32
and float64 with inputs exactly at every kink, in-place rules, rrelu's draws for a seed, and
PyTorch's errors."""

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng

pytestmark = requires_torch

# every kink of the ops below (0, +-0.5, +-1, +-3, 6) and values on either side
KINKS = np.array([-7.0, -3.5, -3.0, -1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 2.0,
                  3.0, 5.0, 6.0, 6.5, 8.0, -1.5, 1.5, -2.0, 0.1, -0.1, 4.0])

# (module constructor over ``m.nn``, input shape)
MODULES = [
    ("m.nn.ELU()", (4, 6)), ("m.nn.ELU(alpha=0.5)", (4, 6)), ("m.nn.CELU(alpha=2.0)", (4, 6)),
    ("m.nn.CELU(0.7)", (4, 6)), ("m.nn.SELU()", (4, 6)), ("m.nn.GLU()", (4, 6)),
    ("m.nn.GLU(dim=0)", (4, 6)), ("m.nn.Hardshrink()", (4, 6)), ("m.nn.Hardshrink(1.0)", (4, 6)),
    ("m.nn.Hardsigmoid()", (4, 6)), ("m.nn.Hardswish()", (4, 6)), ("m.nn.Hardtanh()", (4, 6)),
    ("m.nn.Hardtanh(-0.5, 3.0)", (4, 6)), ("m.nn.ReLU6()", (4, 6)), ("m.nn.LogSigmoid()", (4, 6)),
    ("m.nn.Mish()", (4, 6)), ("m.nn.PReLU()", (4, 6)), ("m.nn.PReLU(6, init=0.1)", (4, 6)),
    ("m.nn.PReLU(3)", (2, 3, 4)), ("m.nn.RReLU(0.1, 0.3).eval()", (4, 6)),
    ("m.nn.Softmin(dim=1)", (4, 6)), ("m.nn.Softshrink()", (4, 6)),
    ("m.nn.Softshrink(1.0)", (4, 6)), ("m.nn.Softsign()", (4, 6)), ("m.nn.Tanhshrink()", (4, 6)),
    ("m.nn.Threshold(0.5, -2.0)", (4, 6)), ("m.nn.Threshold(1, 20)", (4, 6)),
    ("m.nn.LeakyReLU(0.2)", (4, 6)), ("m.nn.Softmax2d()", (2, 3, 4)),
    ("m.nn.Softmax2d()", (1, 2, 3, 4)),
]


def _run(m, ctor, arr, dtype):
    mod = eval(ctor, {"m": m})
    x = m.tensor(arr, dtype=getattr(m, dtype), requires_grad=True)
    if hasattr(mod, "weight"):
        mod = mod.to(getattr(m, dtype))
    y = mod(x)
    w = m.tensor(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)),
                 dtype=getattr(m, dtype))
    params = list(mod.parameters())
    grads = m.autograd.grad((y * w).sum(), [x, *params])
    return mod, y, grads


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ctor,shape", MODULES, ids=[f"{c[5:]}-{len(s)}d" for c, s in MODULES])
def test_module_matches_pytorch_at_the_kinks(ctor, shape, dtype):
    arr = KINKS.reshape(shape)
    mine, y, g = _run(ng, ctor, arr, dtype)
    theirs, ty, tg = _run(torch, ctor, arr, dtype)
    assert repr(mine) == repr(theirs)
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
    assert str(y.dtype) == str(ty.dtype)
    tol = {"rtol": 2e-6, "atol": 1e-7} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-14}
    assert_close(y, ty, **tol, msg=ctor)
    for a, b in zip(g, tg):
        assert_close(a, b, **tol, msg=ctor)


def test_module_reprs_with_inplace_and_defaults():
    for ctor in ("ELU(inplace=True)", "CELU(inplace=True)", "SELU(True)", "Hardtanh(inplace=True)",
                 "ReLU6(inplace=True)", "RReLU(inplace=True)", "Threshold(0.1, 2, True)",
                 "Mish(True)", "Hardswish(True)", "Hardsigmoid(True)", "Softmin()", "GLU()",
                 "PReLU(3)", "Softmax2d()", "Hardshrink(0.25)"):
        assert repr(eval("ng.nn." + ctor)) == repr(eval("torch.nn." + ctor)), ctor
    p = ng.nn.PReLU(3)
    assert p.weight.shape == (3,) and p.weight.requires_grad and p.weight.tolist() == [0.25] * 3
    from numgrad.nn.modules.activation import ELU, Softmax2d
    assert ELU is ng.nn.ELU and Softmax2d is ng.nn.Softmax2d
    with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
        assert ng.nn.Hardtanh(min_value=-2.0).min_val == -2.0


# in-place forms on a non-leaf: values, gradients and node names as PyTorch
INPLACE = [
    "F.elu_(y)", "F.elu(y, 0.5, inplace=True)", "F.selu_(y)", "F.selu(y, True)",
    "F.celu_(y, 2.0)", "F.hardtanh_(y, -0.5, 2.0)", "F.relu6(y, inplace=True)", "F.relu_(y)",
    "F.leaky_relu_(y, 0.2)", "F.leaky_relu(y, 0.1, True)", "F.threshold_(y, 0.5, -1.0)",
    "F.rrelu_(y, 0.1, 0.3)", "F.threshold(y, 0.5, 2.0, True)", "F.elu_(y, 0.0)",
    "F.leaky_relu_(y, 0.0)", "F.celu(y, 0.5, True)", "F.hardsigmoid(y, True)",
    "F.hardswish(y, True)", "F.mish(y, True)",
]


@pytest.mark.parametrize("call", INPLACE)
def test_inplace_forms_match_pytorch(call):
    results = []
    for m in (ng, torch):
        leaf = m.tensor(KINKS, dtype=m.float64, requires_grad=True)
        y = leaf * 1.0
        r = eval(call, {"F": m.nn.functional, "y": y})
        assert r is y
        name = type(y.grad_fn).__name__  # EluBackward1, LeakyReluBackward1, ...
        y.sum().backward()
        results.append((y.detach(), leaf.grad, name))
    assert results[0][2] == results[1][2], call
    assert_close(results[0][0], results[1][0], rtol=1e-12, atol=1e-14, msg=call)
    assert_close(results[0][1], results[1][1], rtol=1e-12, atol=1e-14, msg=call)
    leaf = ng.tensor(KINKS, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        eval(call, {"F": ng.nn.functional, "y": leaf})
    x = ng.tensor(KINKS)  # no graph: written in place
    eval(call, {"F": ng.nn.functional, "y": x})
    assert_close(x, results[0][0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call", ["F.elu_(y, -0.5)", "F.celu_(y, -1.0)",
                                  "F.leaky_relu_(y, -0.2)", "F.elu(y, -1.0, True)"])
def test_inplace_negative_slope_is_refused_at_backward(call):
    """PyTorch computes these in-place derivatives from the result, which a negative slope
    makes ambiguous: the forward runs, the backward raises its error."""
    caught = []
    for m in (ng, torch):
        y = m.tensor(KINKS, requires_grad=True) * 1.0
        r = eval(call, {"F": m.nn.functional, "y": y})
        with pytest.raises(RuntimeError) as info:
            r.sum().backward()
        caught.append(str(info.value))
    assert caught[0] == caught[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rrelu_training_draws_pytorchs_numbers(dtype):
    arr = np.concatenate([KINKS, -KINKS])
    out = []
    for m in (ng, torch):
        m.manual_seed(11)
        x = m.tensor(arr, dtype=getattr(m, dtype), requires_grad=True)
        y = m.nn.functional.rrelu(x, 0.2, 0.6, training=True)
        y2 = m.nn.RReLU()(x)  # a module trains by default: more draws from the same stream
        (g,) = m.autograd.grad((y + y2).sum(), x)
        out.append((y, y2, g, type(y.grad_fn).__name__))
    for a, b in zip(out[0][:3], out[1][:3]):
        assert_close(a, b, rtol=1e-6 if dtype == "float32" else 1e-12, atol=1e-14)
    assert out[0][3] == out[1][3] == "RreluWithNoiseBackward0"
    y = out[0][0].detach().numpy()
    slope = y[arr < 0] / arr[arr < 0]
    assert (slope >= 0.2).all() and (slope < 0.6).all() and len(set(slope.tolist())) > 5


# calls that raise, under m = numgrad and m = torch: same class and message
ERRORS = [
    "F.glu(m.ones(2, 3), 1)", "F.glu(m.ones(2, 3))", "F.glu(m.tensor(1.0))",
    "F.prelu(m.ones(2, 3), m.ones(2))", "F.prelu(m.ones(2, 3), m.ones(1, 3))",
    "F.prelu(m.tensor(2.0), m.ones(2))", "F.prelu(m.ones(3), m.ones(3))",
    "F.celu(m.ones(2), 0.0)", "F.softshrink(m.ones(2), -1.0)",
    "F.softshrink(m.ones(2, dtype=m.float64), -0.5)", "F.hardtanh(m.ones(2), 2.0, 1.0)",
    "m.nn.Hardtanh(1.0, 1.0)", "m.nn.Softmax2d()(m.ones(2))", "F.rrelu(m.ones(2), 0.5, 0.1)",
    "F.elu(m.ones(2, dtype=m.int64))", "F.hardswish(m.ones(2, dtype=m.int64))",
    "F.mish(m.ones(2, dtype=m.int64))", "F.logsigmoid(m.ones(2, dtype=m.int64))",
    "F.hardshrink(m.ones(2, dtype=m.int64))", "F.elu(m.ones(2), 'a')",
    "F.threshold(m.ones(2), 'a', 1)", "F.elu([1.0])", "F.leaky_relu_(m.ones(2, dtype=m.int64))",
    "F.prelu(m.ones(2, 3), m.ones(3, dtype=m.float64))", "F.hardtanh(m.tensor([True]))",
    "F.relu6(m.tensor([True]), True)", "F.threshold(m.tensor([True]), 0, 1)",
]


@pytest.mark.parametrize("call", ERRORS)
def test_errors_match_pytorch(call):
    caught = []
    for m in (ng, torch):
        with pytest.raises(Exception) as info:
            eval(call, {"m": m, "F": m.nn.functional})
        caught.append(info.value)
    mine, theirs = caught
    assert type(mine) is type(theirs), (call, mine, theirs)
    assert str(mine) == str(theirs).split("\n")[0] or str(mine) == str(theirs), call


@pytest.mark.parametrize("x,w", [((-2.0,), (0.25,)), ((-2.0, 1.0), (0.25,)), ((-2.0, 1.0), ()),
                                 (((-2.0, 1.0, 3.0), (0.5, -1.0, 0.0)), ())])
def test_prelu_weight_shapes(x, w):
    """A 0-d input, a 0-d weight: PyTorch's values, gradients and graph (the weight's view)."""
    out = []
    for m in (ng, torch):
        xt = m.tensor(x[0] if len(x) == 1 else x, dtype=m.float64, requires_grad=True)
        wt = m.tensor(0.25 if w == () else w, dtype=m.float64, requires_grad=True)
        y = m.nn.functional.prelu(xt, wt)
        y.sum().backward()
        out.append((y, xt.grad, wt.grad, [type(f).__name__ for f, _ in y.grad_fn.next_functions]))
    for a, b in zip(out[0][:3], out[1][:3]):
        assert_close(a, b, rtol=1e-12)
        assert tuple(a.shape) == tuple(b.shape)
    assert out[0][3] == out[1][3]


def test_softmin_default_dim_warns_and_threshold_keeps_integers():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        ng.nn.functional.softmin(ng.ones(2, 3))
    for m in (ng, torch):
        x = m.tensor([1, 2, -3])
        assert m.nn.functional.threshold(x, 1, 7).tolist() == [7, 2, 7]
        assert m.nn.functional.hardtanh(x).tolist() == [1, 1, -1]
