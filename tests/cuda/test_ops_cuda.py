"""Every op of the shared op table on 'cuda' against the same op on the CPU: forward values,
gradients of every input, dtypes and node names (``tests/op_cases.py``)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from op_cases import CASES, IDS  # noqa: E402

import numgrad as ng  # noqa: E402

SEED = 1234


def _run(case, dtype, device):
    rng = np.random.default_rng(SEED)
    arrays = [make(rng) for make in case[3]]
    ts = [ng.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in arrays]
    out = case[1](ng, *ts)
    weight = np.random.default_rng(7).uniform(0.5, 1.5, size=tuple(out.shape))
    (out * ng.tensor(weight, dtype=out.dtype, device=device)).sum().backward()
    return out, ts


@pytest.mark.parametrize("dtype", [ng.float32, ng.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_op_on_cuda_matches_cpu(case, dtype):
    out_c, ts_c = _run(case, dtype, "cpu")
    out_g, ts_g = _run(case, dtype, "cuda")
    assert out_g.device == ng.device("cuda", 0)
    assert out_g.dtype is out_c.dtype
    assert type(out_g.grad_fn).__name__ == type(out_c.grad_fn).__name__
    tol = {"rtol": 2e-5, "atol": 2e-6} if dtype is ng.float32 else {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(out_g.detach().cpu().numpy(), out_c.detach().numpy(), **tol)
    for i, (tg, tc) in enumerate(zip(ts_g, ts_c)):
        assert tg.grad is not None, f"input {i} got no gradient on cuda"
        assert tg.grad.device == ng.device("cuda", 0)
        np.testing.assert_allclose(tg.grad.cpu().numpy(), tc.grad.numpy(), **tol,
                                   err_msg=f"grad of input {i}")
