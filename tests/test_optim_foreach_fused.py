"""Adam/AdamW's ``foreach=`` and ``fused=``: the same kernels, PyTorch's numbers and errors."""

import numpy as np
import pytest
from conftest import requires_torch, torch

import numgrad as ng

SHAPES = [(7, 5), (30,), (1,)]


def _trajectory(m, cls, steps=5, **kw):
    rng = np.random.default_rng(0)
    ps = [m.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
          for s in SHAPES]
    opt = getattr(m.optim, cls)(ps, lr=1e-2, **kw)
    for _ in range(steps):
        for p in ps:
            p.grad = m.tensor(rng.standard_normal(p.shape).astype(np.float32))
        opt.step()
    state = [opt.state[p] for p in ps]
    return ([p.detach().numpy().copy() for p in ps],
            [s["exp_avg"].numpy().copy() for s in state],
            [s["exp_avg_sq"].numpy().copy() for s in state])


@requires_torch
@pytest.mark.parametrize("cls, kw", [("AdamW", dict(weight_decay=0.1)),
                                     ("Adam", dict(amsgrad=True, maximize=True))])
def test_fused_trajectory_is_pytorchs_fused(cls, kw):
    """PyTorch's fused CPU kernel rounds a few values an ulp apart from its single-tensor
    path (numgrad runs the single-tensor arithmetic for every ``fused``)."""
    ours = _trajectory(ng, cls, fused=True, **kw)
    theirs = _trajectory(torch, cls, fused=True, **kw)
    for a, b in zip(sum(ours, []), sum(theirs, [])):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@requires_torch
def test_foreach_moving_averages_are_pytorchs_bit_for_bit():
    ours = _trajectory(ng, "AdamW", foreach=True, weight_decay=0.1)
    theirs = _trajectory(torch, "AdamW", foreach=True, weight_decay=0.1)
    for a, b in zip(ours[1] + ours[2], theirs[1] + theirs[2]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(ours[0], theirs[0]):  # PyTorch's foreach/single-tensor sqrt is MKL's
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@requires_torch
@pytest.mark.parametrize("kw", [dict(fused=True, foreach=True),
                                dict(fused=True, differentiable=True)])
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_fused_argument_errors_are_pytorchs(cls, kw):
    messages = []
    for m in (ng, torch):
        with pytest.raises(RuntimeError) as e:
            getattr(m.optim, cls)([m.zeros(2, requires_grad=True)], **kw)
        messages.append(str(e.value))
    assert messages[0] == messages[1]
