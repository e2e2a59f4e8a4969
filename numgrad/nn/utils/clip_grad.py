"""Gradient clipping over a model's parameters (norms and scaling run as kernels).

PyTorch's order of work: each gradient's norm (grouped by device and dtype), the norm of
those norms, the coefficient clamp(max_norm / (total + 1e-6), max=1) as a tensor, every
gradient multiplied by it (also when it is 1), so nothing is read on the host. Gradients
that are float32 or float64 host arrays, contiguous and non-empty, all of one dtype (a
model's usual case) take one pass of kernel calls with no tensor made per gradient; anything
else, and any call while a compiled step is being traced, goes through the tensor ops."""

import math
import types
import warnings

import numpy as np

from numgrad import _hook
from numgrad.autograd.grad_mode import no_grad
from numgrad.kernels import LazyKernels
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.tensor import Tensor, _wrap

RED = LazyKernels("reduction")
OPT = LazyKernels("optim")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


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


def _flat(grads):
    """The gradients' data as flat arrays when they take the kernels' pass (host float32 or
    float64 of one dtype, C-contiguous, non-empty, no trace running); else None."""
    if _hook.TAPE is not None:
        return None
    flats = []
    dt = None
    for g in grads:
        a = g._data
        if (a.__class__ is not np.ndarray or not a.flags.c_contiguous or a.size == 0
                or not a.flags.writeable or (a.dtype is not dt and dt is not None)):
            return None
        dt = a.dtype
        flats.append(a.reshape(-1))
    return flats if dt in _FLOATS else None


def _total_of(flats, norm_type):
    """The norm of the per-array norms, each by the kernel ``linalg.vector_norm`` runs on a
    contiguous tensor, as a (1, 1) array."""
    norms = np.empty((len(flats), 1), flats[0].dtype)
    kernel = RED.norm_3d
    for k, a in enumerate(flats):
        kernel(a.reshape(1, a.size, 1), norms[k:k + 1], norm_type)
    total = np.empty((1, 1), norms.dtype)
    kernel(norms.reshape(1, len(flats), 1), total, norm_type)
    return total


def _check_finite(total, norm_type, error_if_nonfinite):
    if not error_if_nonfinite:
        return
    _hook.host_read("clip_grad_norm_(error_if_nonfinite=True)")
    if not math.isfinite(float(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of ``tensors`` viewed as one vector: the norm of their norms (a tensor)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _wrap(np.zeros((), np.float32))
    flats = _flat(tensors)
    if flats is not None:
        total = _wrap(_total_of(flats, norm_type).reshape(()))
    else:
        norms = [red.norm(g, norm_type) for g in _by_device_and_dtype(tensors)]
        total = red.norm(sh.stack(norms), norm_type)
    _check_finite(total, norm_type, error_if_nonfinite)
    return total


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` in place by clamp(max_norm / (total_norm + 1e-6),
    max=1), ``total_norm`` a tensor already computed."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    if not grads:
        return
    _scale(grads, _flat(grads), max_norm, total_norm)


def _scale(grads, flats, max_norm, total):
    t = total._data if isinstance(total, Tensor) else None
    if (flats is not None and t.__class__ is np.ndarray and t.size == 1
            and t.dtype is flats[0].dtype):
        coef = np.empty(1, t.dtype)
        OPT.clip_coef(t.reshape(1), max_norm, coef)
        kernel = OPT.scale_
        for g, a in zip(grads, flats):
            g._bump_version()  # first: an inference tensor's error leaves it unchanged
            kernel(a, coef)
        return
    # max_norm / (total + 1e-6) is, for a tensor, reciprocal(total + 1e-6) * max_norm
    coef = ew.clamp(ew.mul(un.reciprocal(ew.add(total, 1e-6)), max_norm), max=1.0)
    for g in grads:
        g.mul_(coef)


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale gradients in place so their joint norm is at most ``max_norm``; return the norm
    before clipping (a tensor). ``error_if_nonfinite=True`` reads the total on the host to
    check it (a compiled step then runs eagerly)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    norm_type = float(norm_type)
    max_norm = float(max_norm)
    if not grads:
        return _wrap(np.zeros((), np.float32))
    flats = _flat(grads)
    if flats is not None:
        total = _wrap(_total_of(flats, norm_type).reshape(()))
        _check_finite(total, norm_type, error_if_nonfinite)
    else:
        total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    _scale(grads, flats, max_norm, total)
    return total


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    for g in _grads(parameters):
        g.clamp_(-clip_value, clip_value)
