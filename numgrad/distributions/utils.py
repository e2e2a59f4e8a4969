"""Helpers shared by the distributions: broadcasting parameters, probabilities <-> logits,
lazily computed attributes."""

import functools
import numbers

import numgrad
from numgrad._shape import broadcast_shapes

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits"]


def broadcast_all(*values):
    """The values as tensors of one broadcast shape (numbers take the first tensor's dtype,
    else the default dtype)."""
    for v in values:
        if not isinstance(v, (numgrad.Tensor, numbers.Number)):
            raise ValueError("Input arguments must all be instances of Number, "
                             "torch.Tensor or objects implementing __torch_function__.")
    dtype = next((v.dtype for v in values if isinstance(v, numgrad.Tensor)),
                 numgrad.get_default_dtype())
    tensors = [v if isinstance(v, numgrad.Tensor) else numgrad.tensor(v, dtype=dtype)
               for v in values]
    shape = functools.reduce(broadcast_shapes, [tuple(t.shape) for t in tensors])
    return tuple(t if tuple(t.shape) == tuple(shape) else t.expand(shape) for t in tensors)


def standard_normal(shape, dtype, device=None):
    """N(0, 1) draws, filled as PyTorch fills ``empty(shape).normal_()``."""
    return numgrad.empty(shape, dtype=dtype, device=device).normal_()


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return numgrad.sigmoid(logits)
    return numgrad.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Probabilities clamped into [eps, 1 - eps]."""
    eps = numgrad.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    clamped = clamp_probs(probs)
    if is_binary:
        return numgrad.log(clamped) - numgrad.log1p(-clamped)
    return numgrad.log(clamped)


class lazy_property:  # noqa: N801  (PyTorch's name)
    """Computed on first access (with grad enabled), then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with numgrad.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
