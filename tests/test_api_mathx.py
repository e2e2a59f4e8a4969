"""numgrad.finfo / numgrad.iinfo against PyTorch: every attribute, the repr and the errors;
numgrad.special against torch.special: values, gradients and node names."""

import pytest

import numgrad
from tests.conftest import requires_torch

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("uint8", "int8", "int16", "int32", "int64")


@requires_torch
@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(name):
    import torch
    ours, theirs = numgrad.finfo(getattr(numgrad, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                 "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert repr(ours) == repr(theirs)


@requires_torch
@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(name):
    import torch
    ours, theirs = numgrad.iinfo(getattr(numgrad, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert repr(ours) == repr(theirs)


@requires_torch
def test_finfo_default_dtype():
    import torch
    assert repr(numgrad.finfo()) == repr(torch.finfo())
    assert numgrad.finfo().eps == 2.0 ** -23


@requires_torch
@pytest.mark.parametrize("call", [
    lambda m: m.finfo(m.int32), lambda m: m.iinfo(m.float32), lambda m: m.iinfo(m.bool)])
def test_info_errors_match_torch(call):
    import torch
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(type(expected.value)) as got:
        call(numgrad)
    assert str(got.value) == str(expected.value)


@requires_torch
@pytest.mark.parametrize("call", [
    lambda m, x: m.swapaxes(x, 0, 2), lambda m, x: m.swapdims(x, -1, 1),
    lambda m, x: x.swapaxes(1, 0), lambda m, x: x.swapdims(2, -3)])
def test_swapaxes_swapdims_match_torch(call):
    import numpy as np
    import torch

    from tests.conftest import to_torch
    x = numgrad.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
    tx = to_torch(x, requires_grad=True)
    y, ty = call(numgrad, x), call(torch, tx)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    assert type(y.grad_fn).__name__ == ty.grad_fn.name() == "TransposeBackward0"
    w = np.linspace(-1.0, 1.0, 24).reshape(ty.shape)
    (y * numgrad.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_transpose_aliases_are_whole_names():
    # the aliases are names, not the letters of one
    assert not hasattr(numgrad, "s") and not hasattr(numgrad.Tensor, "w")


@requires_torch
def test_swapaxes_error_matches_torch():
    import torch
    with pytest.raises(IndexError) as expected:
        torch.swapaxes(torch.zeros(2, 3), 0, 2)
    with pytest.raises(IndexError) as got:
        numgrad.swapaxes(numgrad.zeros(2, 3), 0, 2)
    assert str(got.value) == str(expected.value)


SPECIAL = ["erf(x)", "erfc(x)", "expm1(x)", "log1p(x)", "expit(x)", "gammaln(x + 2)",
           "digamma(x + 2)", "psi(x + 2)", "polygamma(1, x + 2)", "round(x * 3, decimals=1)",
           "softmax(x, 1)", "log_softmax(x, 0, dtype=m.float32)", "logsumexp(x, 1, keepdim=True)"]


@requires_torch
@pytest.mark.parametrize("call", SPECIAL)
def test_special_matches_torch(call):
    import numpy as np
    import torch
    arr = np.linspace(-0.9, 0.8, 6).reshape(2, 3)
    res = []
    for m in (numgrad, torch):
        x = m.tensor(arr, requires_grad=True)
        out = eval(f"m.special.{call}", {"m": m, "x": x})
        out.sum().backward()
        res.append((out.detach().numpy(), x.grad.numpy(), out.grad_fn.name(), str(out.dtype)))
    (o, g, n, d), (to, tg, tn, td) = res
    np.testing.assert_allclose(o, to, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(g, tg, rtol=1e-6, atol=1e-12)
    assert (n, d) == (tn, td)
