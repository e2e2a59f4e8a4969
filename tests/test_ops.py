"""Every op: forward against NumPy, backward against float64 finite differences, and both
(plus the grad_fn name) against PyTorch when it is installed.

The cases live in ``op_cases.py`` (the CUDA tests run the same table on the GPU).
"""

import numpy as np
import pytest
from conftest import assert_close, finite_difference, requires_torch, to_numpy, to_torch, torch
from op_cases import CASES, IDS

import numgrad as ng

SEED = 1234


def _inputs(case, dtype, requires_grad=True):
    rng = np.random.default_rng(SEED)
    arrays = [make(rng) for make in case[3]]
    return arrays, [ng.tensor(a, dtype=dtype, requires_grad=requires_grad) for a in arrays]


@pytest.mark.parametrize("dtype", [ng.float32, ng.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_numpy(case, dtype):
    arrays, ts = _inputs(case, dtype, requires_grad=False)
    out = case[1](ng, *ts)
    expected = np.asarray(case[2](*[a.astype(dtype.np).astype(np.float64) for a in arrays]))
    tol = {"rtol": 2e-5, "atol": 2e-6} if dtype is ng.float32 else {"rtol": 1e-12, "atol": 1e-12}
    assert_close(np.asarray(to_numpy(out), np.float64), expected.astype(np.float64), **tol,
                 msg=case[0])
    if case[0] != "to_double":
        assert out.dtype is dtype


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_matches_finite_differences(case):
    arrays, ts = _inputs(case, ng.float64)
    out = case[1](ng, *ts)
    weight = np.random.default_rng(7).uniform(0.5, 1.5, size=out.shape)
    (out * ng.tensor(weight)).sum().backward()

    def forward(*arrs):
        with ng.no_grad():
            return to_numpy(case[1](ng, *[ng.tensor(a) for a in arrs]))

    for i, t in enumerate(ts):
        expected = finite_difference(forward, arrays, i, weight)
        assert t.grad is not None, f"{case[0]}: input {i} got no gradient"
        assert_close(t.grad, expected, rtol=1e-6, atol=1e-7, msg=f"{case[0]} input {i}")


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_pytorch(case, dtype):
    arrays, ts = _inputs(case, getattr(ng, dtype))
    tts = [to_torch(t) for t in ts]
    out = case[1](ng, *ts)
    tout = case[1](torch, *tts)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    assert_close(out, tout, **tol, msg="forward")
    assert str(out.dtype) == str(tout.dtype)
    weight = np.random.default_rng(7).uniform(0.5, 1.5, size=tuple(out.shape))
    (out * ng.tensor(weight, dtype=out.dtype)).sum().backward()
    (tout * torch.tensor(weight, dtype=tout.dtype)).sum().backward()
    for t, tt in zip(ts, tts):
        assert_close(t.grad, tt.grad, **tol, msg="grad")


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_node_names_match_pytorch(case):
    _, ts = _inputs(case, ng.float32)
    tts = [to_torch(t) for t in ts]
    out = case[1](ng, *ts)
    tout = case[1](torch, *tts)
    known_different = {"matmul_bcast", "matmul_bcast2", "matmul_1d_3d", "bmm", "vm",
                       "split", "chunk", "unbind"}
    # attention's math path: its batched products (as matmul_bcast), PyTorch's _safe_softmax
    # node (numgrad: SoftmaxBackward0) and its empty-keys graph (docs/compatibility.md)
    math_sdpa = {"3d_mask", "2d", "v_dim", "3d_mask_on_4d", "batch_broadcast", "5d",
                 "transposed_q", "empty_keys"}
    if case[0] in {f"scaled_dot_product_attention_{k}" for k in math_sdpa}:
        flash = "ScaledDotProductFlashAttentionForCpuBackward0"  # neither takes the flash path
        assert flash not in (type(out.grad_fn).__name__, type(tout.grad_fn).__name__)
        return
    if case[0] in known_different:  # composite in PyTorch, one node here (docs/compatibility.md)
        return
    assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__
    names = [type(n).__name__ if n is not None else None for n, _ in out.grad_fn.next_functions]
    tnames = [type(n).__name__ if n is not None else None for n, _ in tout.grad_fn.next_functions]
    assert names == tnames


@pytest.mark.parametrize("dtype", [ng.float32, ng.float64], ids=["f32", "f64"])
def test_numerically_stable_where_pytorch_is(dtype):
    x = ng.tensor([-200.0, -50.0, 0.0, 50.0, 200.0], dtype=dtype, requires_grad=True)
    s = ng.sigmoid(x)
    assert np.isfinite(s.detach().numpy()).all()
    assert 0.0 <= s[0].item() < 1e-80 and s[-1].item() == 1.0
    s.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    logits = ng.tensor([[1000.0, 0.0, -1000.0]], dtype=dtype, requires_grad=True)
    lp = logits.log_softmax(1)
    assert_close(lp, np.array([[0.0, -1000.0, -2000.0]]), rtol=1e-6)
    assert_close(logits.logsumexp(1), np.array([1000.0]))
    assert_close(logits.softmax(1), np.array([[1.0, 0.0, 0.0]]))
    lp[0, 1].backward()
    assert_close(logits.grad, np.array([[-1.0, 1.0, 0.0]]), atol=1e-6)
    if torch is not None:
        t = torch.tensor([[1000.0, 0.0, -1000.0]], dtype=getattr(torch, dtype.name))
        assert_close(logits.detach().log_softmax(1), t.log_softmax(1))
        assert_close(ng.sigmoid(x.detach()), torch.sigmoid(to_torch(x.detach())))


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_family_with_nan_and_inf_rows_matches_pytorch(dtype):
    nan, inf = float("nan"), float("inf")
    rows = [[1.0, nan, 3.0, 0.5], [nan, 0.0, 1.0, 2.0], [1.0, 2.0, 3.0, nan], [-inf, 0.0, 1.0, 2.0],
            [inf, 0.0, 1.0, 2.0], [-inf, -inf, -inf, -inf], [0.1, 0.2, 0.3, 0.4]]
    x = np.array(rows, dtype=dtype)
    for fn in ("softmax", "log_softmax"):
        ours = getattr(ng, fn)(ng.tensor(x), 1)
        theirs = getattr(torch, fn)(torch.tensor(x), 1)
        np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-6, atol=1e-7)


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_family_and_nan_to_num_edges_match_pytorch(dtype):
    """lgamma, digamma and polygamma at their poles, the reflection side, tiny, huge and
    infinite inputs; nan_to_num's defaults (the dtype's extremes) and integer inputs."""
    nan, inf = float("nan"), float("inf")
    grid = np.array([0.0, -0.0, -1.0, -2.0, -2.5, -0.5, -1e-30, 1e-30, 0.3, 1.0, 1.4616, 9.99,
                     10.0, 25.0, 1e10, 1e30, -1e30, -7.25, inf, -inf, nan], dtype=dtype)
    x, tx = ng.tensor(grid), torch.tensor(grid)
    tol = {"rtol": 2e-5, "atol": 0} if dtype == "float32" else {"rtol": 1e-11, "atol": 0}
    pairs = [(ng.lgamma(x), torch.lgamma(tx)), (x.digamma(), tx.digamma())]
    pairs += [(ng.polygamma(n, x), torch.polygamma(n, tx)) for n in (1, 3)]
    for ours, theirs in pairs:
        np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), equal_nan=True, **tol)
    v = np.array([1.0, nan, inf, -inf, -2.0], dtype=dtype)
    for kw in ({}, {"nan": 1.5, "posinf": 2.0, "neginf": -3}):
        assert_close(ng.nan_to_num(ng.tensor(v), **kw), torch.nan_to_num(torch.tensor(v), **kw))
    y = ng.tensor(v)
    assert y.nan_to_num_(posinf=7.0) is y
    assert_close(y, torch.tensor(v).nan_to_num_(posinf=7.0))
    i = ng.tensor([1, 2])
    r = ng.nan_to_num(i, nan=0.5)
    assert r is not i and r.dtype is ng.int64 and r.tolist() == [1, 2]
    with pytest.raises(TypeError, match="argument 'nan' must be float, not str"):
        ng.nan_to_num(y, nan="a")
    with pytest.raises(RuntimeError, match="does not support negative n"):
        ng.polygamma(-1, y)
