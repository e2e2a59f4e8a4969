"""Gradient clipping over a model's parameters (norms and scaling run as kernels)."""

import math

import numpy as np

from numgrad._compile import tape as _tape
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


def _by_device_and_dtype(grads):
    """``grads`` grouped by (device, dtype) in order of first appearance, as PyTorch takes
    their norms (the order of the norms in the stack of the total)."""
    groups = {}
    for g in grads:
        groups.setdefault((g._data.__class__, g._data.dtype), []).append(g)
    return [g for group in groups.values() for g in group]


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale gradients in place so their joint norm is at most ``max_norm``; return the norm
    before clipping (a tensor).

    As PyTorch computes it: the total is the norm of the stacked per-gradient norms, and every
    gradient is multiplied by the tensor clamp(max_norm / (total + 1e-6), max=1), also when
    that is 1, so no value is read on the host and a compiled step replays the clipping.
    ``error_if_nonfinite=True`` reads the total on the host to check it."""
    grads = _grads(parameters)
    norm_type = float(norm_type)
    max_norm = float(max_norm)
    if not grads:
        return _wrap(np.zeros((), np.float32))
    norms = [red.norm(g, norm_type) for g in _by_device_and_dtype(grads)]
    total = red.norm(sh.stack(norms), norm_type)
    if error_if_nonfinite:
        if _tape.TAPE is not None:
            _tape.host_read("clip_grad_norm_(error_if_nonfinite=True)")
        if not math.isfinite(float(total)):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    # max_norm / (total + 1e-6) is, for a tensor, reciprocal(total + 1e-6) * max_norm
    coef = ew.clamp(ew.mul(un.reciprocal(ew.add(total, 1e-6)), max_norm), max=1.0)
    for g in grads:
        g.mul_(coef)
    return total


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    for g in _grads(parameters):
        g.clamp_(-clip_value, clip_value)
