"""Higher-order gradients: gradcheck and gradgradcheck (float64) on every op of the op table,
PyTorch's gradcheck messages, and create_graph semantics."""

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch
from test_ops import CASES, IDS

import numgrad as ng
from numgrad.autograd import GradcheckError, gradcheck, gradgradcheck


def _inputs(case):
    rng = np.random.default_rng(99)
    return [ng.tensor(make(rng), dtype=ng.float64, requires_grad=True) for make in case[3]]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradcheck(case):
    assert gradcheck(lambda *xs: case[1](ng, *xs), _inputs(case))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradgradcheck(case):
    assert gradgradcheck(lambda *xs: case[1](ng, *xs), _inputs(case))


# --------------------------------------------------------------------------- gradcheck API


def _bad_function(m):
    class Bad(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3
    return Bad.apply


def test_gradcheck_failure_message():
    x = ng.tensor([1.0, 2.0], dtype=ng.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as err:
        gradcheck(_bad_function(ng), (x,))
    assert issubclass(GradcheckError, RuntimeError)
    assert str(err.value).startswith(
        "Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor([[2.0000, "
        "0.0000],\n        [0.0000, 2.0000]], dtype=torch.float64)\nanalytical:tensor([[3., 0.],")
    assert gradcheck(_bad_function(ng), (x,), raise_exception=False) is False


@requires_torch
def test_gradcheck_message_matches_pytorch():
    from torch.autograd.gradcheck import GradcheckError as TorchError
    x = ng.tensor([1.0, 2.0, 3.0], dtype=ng.float64, requires_grad=True)
    tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as ours:
        gradcheck(_bad_function(ng), (x,))
    with pytest.raises(TorchError) as theirs:
        torch.autograd.gradcheck(_bad_function(torch), (tx,))
    assert str(ours.value) == str(theirs.value)


def test_gradcheck_warns_for_float32():
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double"):
        gradcheck(lambda t: t * 2, (ng.ones(2, requires_grad=True),), raise_exception=False)


def test_gradcheck_defaults_are_pytorchs():
    import inspect
    sig = inspect.signature(gradcheck).parameters
    assert (sig["eps"].default, sig["atol"].default, sig["rtol"].default,
            sig["raise_exception"].default) == (1e-6, 1e-5, 1e-3, True)


# --------------------------------------------------------------------------- create_graph


def test_retain_graph_defaults_to_create_graph():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.grad_fn is not None
    x.grad = None
    y.backward()  # the graph was retained
    assert_close(x.grad, np.array([3.0, 12.0], np.float32))
    (g.sum()).backward()
    assert_close(x.grad, np.array([3.0 + 6.0, 12.0 + 12.0], np.float32))


@requires_torch
def test_second_derivative_graph_names_match_pytorch():
    def run(m):
        x = m.tensor([0.5, -0.3], requires_grad=True)
        (g,) = m.autograd.grad(x.tanh().sum(), x, create_graph=True)
        return type(g.grad_fn).__name__
    assert run(ng) == run(torch)


# --------------------------------------------------------------------------- anomaly mode


def test_anomaly_mode_names_the_node_and_forward_call():
    x = ng.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = ng.autograd.detect_anomaly()
    with mode:
        assert ng.autograd.is_anomaly_enabled()
        y = (x / x).sum()  # the line the report must name
        with pytest.warns(UserWarning, match="Error detected in DivBackward0"):
            with pytest.raises(RuntimeError) as err:
                y.backward()
    assert str(err.value) == "Function 'DivBackward0' returned nan values in its 1th output."
    assert any("y = (x / x).sum()" in note for note in err.value.__notes__)
    assert not ng.autograd.is_anomaly_enabled()


@requires_torch
def test_anomaly_error_matches_pytorch():
    import warnings

    def run(m):
        x = m.tensor([0.0, 1.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with m.autograd.set_detect_anomaly(True):
                try:
                    (x / x).sum().backward()
                except RuntimeError as e:
                    return str(e)
    assert run(ng) == run(torch)


def test_no_nan_check_when_disabled():
    x = ng.tensor([0.0, 1.0], requires_grad=True)
    (x / x).sum().backward()
    assert np.isnan(x.grad.numpy()[0])
