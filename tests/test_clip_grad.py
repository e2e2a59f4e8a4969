"""clip_grad_norm_, get_total_norm and clip_grads_with_norm_: the one-pass kernel path (host
float gradients of one dtype) against the tensor-op path and against PyTorch."""

import warnings

import numpy as np
import pytest
from conftest import assert_close, requires_torch, torch

import numgrad as ng

SHAPES = [(6, 5), (5,), (3, 2, 2), ()]


def _params(m, grads, dtype):
    ps = []
    for g in grads:
        p = m.zeros(g.shape, dtype=dtype, requires_grad=True)
        p.grad = m.tensor(g.copy())
        ps.append(p)
    return ps


def _grads(rng, scale, dt=np.float32):
    return [(rng.standard_normal(s) * scale).astype(dt) for s in SHAPES]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_one_pass_equals_the_tensor_op_path_bit_for_bit(norm_type, dt):
    """A transposed (non-contiguous) gradient sends the whole call through the tensor ops:
    totals and scaled gradients are the same bits as the kernels' pass."""
    rng = np.random.default_rng(0)
    for scale in (1e-3, 10.0):
        grads = _grads(rng, scale, dt)
        fast = _params(ng, grads, getattr(ng, np.dtype(dt).name))
        slow = _params(ng, grads, getattr(ng, np.dtype(dt).name))
        slow[0].grad = ng.tensor(np.ascontiguousarray(grads[0].T)).t()
        assert not slow[0].grad.is_contiguous()
        t_fast = ng.nn.utils.clip_grad_norm_(fast, 0.5, norm_type)
        t_slow = ng.nn.utils.clip_grad_norm_(slow, 0.5, norm_type)
        assert t_fast.dtype == t_slow.dtype
        np.testing.assert_array_equal(t_fast.numpy(), t_slow.numpy())
        for p, q in zip(fast, slow):
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_scaling_bumps_versions_and_nonfinite_check():
    rng = np.random.default_rng(1)
    ps = _params(ng, _grads(rng, 10.0), ng.float32)
    before = [p.grad._version for p in ps]
    ng.nn.utils.clip_grad_norm_(ps, 1.0)
    assert [p.grad._version for p in ps] == [v + 1 for v in before]
    ps[1].grad[0] = float("nan")
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        ng.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    total = ng.nn.utils.clip_grad_norm_(ps, 1.0, foreach=True)
    assert np.isnan(total.item())


@requires_torch
@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_total_norm_and_scaling_match_pytorch(norm_type):
    rng = np.random.default_rng(2)
    grads = _grads(rng, 3.0)
    ours = ng.nn.utils.get_total_norm([ng.tensor(g) for g in grads], norm_type)
    theirs = torch.nn.utils.get_total_norm([torch.tensor(g) for g in grads], norm_type)
    assert_close(ours, theirs, rtol=1e-6, atol=0)
    ps, qs = _params(ng, grads, ng.float32), _params(torch, grads, torch.float32)
    ng.nn.utils.clip_grads_with_norm_(ps, 1.0, ours, foreach=False)
    torch.nn.utils.clip_grads_with_norm_(qs, 1.0, torch.tensor(ours.numpy()))
    for p, q in zip(ps, qs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    # mixed dtypes take the tensor ops, as PyTorch groups them
    mixed = [ng.tensor(grads[0].astype(np.float64)), ng.tensor(grads[1])]
    want = torch.nn.utils.get_total_norm([torch.tensor(grads[0].astype(np.float64)),
                                          torch.tensor(grads[1])], norm_type)
    assert_close(ng.nn.utils.get_total_norm(mixed, norm_type), want, rtol=1e-6, atol=0)


@requires_torch
def test_empty_generator_warns_as_pytorch():
    for m in (ng, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            total = m.nn.utils.clip_grad_norm_((p for p in []), 1.0)
        assert [str(w.message) for w in caught] == [
            "`parameters` is an empty generator, no gradient clipping will occur."]
        assert total.item() == 0.0
