"""Gradient clipping over a model's parameters (norms and scaling run as kernels)."""

import math

from numgrad.autograd.grad_mode import no_grad
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.tensor import Tensor, _wrap


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale gradients in place so their joint norm is at most ``max_norm``; return the norm
    before clipping."""
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        import numpy as np
        return _wrap(np.zeros((), np.float32))
    norms = [red.norm(g, norm_type) for g in grads]
    total = red.norm(sh.stack(norms), norm_type)
    if total.is_cuda and not error_if_nonfinite:
        # scale by min(1, max_norm / (norm + 1e-6)) on the GPU: no copy of the norm to the host
        coef = ew.clamp(ew.mul(un.reciprocal(ew.add(total, 1e-6)), float(max_norm)), max=1.0)
        for g in grads:
            g.mul_(coef)
        return total
    value = total.item()
    if error_if_nonfinite and not math.isfinite(value):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`")
    coef = float(max_norm) / (value + 1e-6)
    if coef < 1.0:
        for g in grads:
            g.mul_(coef)
    return total


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    for g in _grads(parameters):
        g.clamp_(-clip_value, clip_value)
