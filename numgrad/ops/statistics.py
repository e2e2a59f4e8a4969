"""Variance and standard deviation, each declared once (``VarBackward0``, ``StdBackward0``),
with PyTorch's signatures: ``var(input, dim=None, *, correction=1, keepdim=False)``, the
older ``unbiased`` forms, and the ``axis=``/``keepdims=`` spellings."""

import math
import warnings

from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import unary as un
from numgrad.ops._util import Tensor, dtype_of
from numgrad.ops.registry import op, respell


def _arguments(fn, input, dim, unbiased, correction, keepdim):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(dim, bool):  # var(x, False): the legacy ``unbiased`` position
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{fn}() received an invalid combination of arguments: 'unbiased' and "
                        "'correction' cannot both be given")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if dtype_of(input)._kind != 2:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    x = input._data
    dims = tuple(range(x.ndim)) if red._is_all(dim) else red._reduce_dims(
        (dim,) if isinstance(dim, int) else tuple(dim), x.ndim)
    n = 1
    for d in dims:
        n *= x.shape[d]
    if n - correction <= 0:
        warnings.warn(f"{fn}(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=4)
    return dims, correction, bool(keepdim), n


def _centered(x, dims, n):
    """x - mean(x, dims): the deviations both the forward and the derivatives use."""
    return ew.sub(x, ew.div(red.sum(x, dims, keepdim=True), n if n else math.nan))


def _divisor(n, correction):
    return max(0, n - correction)


def _variance(x, dims, correction, keepdim, n):
    dev = _centered(x, dims, n)
    s = red.sum(ew.mul(dev, dev), dims, keepdim=keepdim)
    d = _divisor(n, correction)
    return ew.div(s, d) if d else ew.mul(s, math.inf)


def _keep(grad, x, dims, keepdim):
    """``grad`` with the reduced dims back as size 1, so it broadcasts against ``x``."""
    if keepdim or not dims:
        return grad
    shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape))
    return grad.reshape(shape)


def _var_backward(grad, self, dim, correction, keepdim):
    every = tuple(range(self.dim()))
    dims = every if dim is None or not dim else dim
    n = 1
    for d in dims:
        n *= self.shape[d]
    mean = ew.div(red.sum(self, dims, keepdim=True), n if n else math.nan)
    dev = ew.sub(self, mean)
    if dim is None or self.dim() == 0:
        d = n - correction
        if d > 0:
            return ew.mul(ew.mul(_keep(grad, self, dims, keepdim), dev), 2.0 / d)
        # no degrees of freedom (PyTorch's rule for a reduction over everything): 2 / d is
        # infinite, so the gradient is grad * inf, NaN where x equals the mean
        g = _keep(grad, self, dims, keepdim)
        return ew.where(ew.eq(self, mean), ew.mul(g, math.nan), ew.mul(g, math.inf))
    # over listed dims PyTorch scales by 2 / (rnumel - correction) with rnumel the product of
    # the listed sizes (1 for an empty list), whatever its sign (2 / 0 = inf)
    rnumel = 1
    for d in dim:
        rnumel *= self.shape[d]
    d = rnumel - correction
    scale = 2.0 / d if d else math.inf
    return ew.mul(ew.mul(_keep(grad, self, dim, keepdim), dev), scale)


def _std_backward(grad, self, dim, correction, keepdim, result):
    # d std = d var / (2 std); where std is 0 the gradient is 0, as PyTorch
    g = ew.where(ew.eq(result, 0), 0.0, ew.div(grad, ew.mul(result, 2)))
    return _var_backward(g, self, dim, correction, keepdim)


def _saved_dim(dim, dims):
    """The dim the node keeps, as PyTorch's: None when none was given, () for an empty list
    (the two differ in the backward rule when there are no degrees of freedom)."""
    if dim is None or isinstance(dim, bool):
        return None
    return () if isinstance(dim, (tuple, list)) and not dim else dims


# d/dx var(x) = 2 (x - mean(x)) / (N - correction)
@op(node="VarBackward0", grads={"self": _var_backward})
@respell
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` (all dims when None) with Bessel's ``correction``."""
    dims, c, keepdim, n = _arguments("var", input, dim, unbiased, correction, keepdim)
    from numgrad.autograd.grad_mode import no_grad
    with no_grad():
        r = _variance(input.detach(), dims, c, keepdim, n)
    return r._data, {"dim": _saved_dim(dim, dims), "correction": c, "keepdim": keepdim}


# d/dx std(x) = (x - mean(x)) / ((N - correction) std(x))
@op(node="StdBackward0", grads={"self": _std_backward})
@respell
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation over ``dim`` (all dims when None) with Bessel's ``correction``."""
    dims, c, keepdim, n = _arguments("std", input, dim, unbiased, correction, keepdim)
    from numgrad.autograd.grad_mode import no_grad
    with no_grad():
        r = un.sqrt(_variance(input.detach(), dims, c, keepdim, n))
    return r._data, {"dim": _saved_dim(dim, dims), "correction": c, "keepdim": keepdim}

