"""The checks that PyTorch's nn kernels make of their own arguments, shared by the ``nn_*``
op modules (``numgrad.nn._checks`` parses the arguments before them): dtype errors of a
kernel without an integer version, dtype agreement, shape errors of in-place broadcasting,
the norms' mixed-dtype rule, refused gradients, and a loss's reduction. Only attribute
compares (no pass over the data)."""

import numpy as np

from numgrad._shape import broadcast_shapes, dim_error  # noqa: F401  (shared by the nn ops)
from numgrad.ops._util import dtype_of, state


def not_implemented(kernel, t):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_of(t)._legacy}'")


def require_float(t, kernel):
    """PyTorch's error for a kernel that has no integer (or bool) version."""
    if not dtype_of(t).is_floating_point:
        raise not_implemented(kernel, t)


def same_type(t, other):
    """A kernel's check that ``other`` (if given) has the dtype of ``t``."""
    if other is not None and other._data.dtype != t._data.dtype:
        raise RuntimeError(f"expected scalar type {dtype_of(t)._legacy} but found "
                           f"{dtype_of(other)._legacy}")


def type_name(t):
    """A tensor's legacy type name, as PyTorch's convolution messages print it."""
    return f"torch.{dtype_of(t)._legacy}Tensor"


def ctrunc(a, b):
    """C++ integer division (truncates toward zero), as in PyTorch's shape formulas."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def nonempty(fn, shape, what="input has sizes", tail=""):
    """PyTorch's check that every non-batch dim of ``shape`` is non-empty."""
    for i in range(1, len(shape)):
        if shape[i] <= 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but {what} {list(shape)} with dimension {i} being "
                               f"empty{tail}")


def inplace_shape(out_shape, other_shape):
    """The checks of an in-place broadcasting op ``out.op_(other)``."""
    b = broadcast_shapes(tuple(out_shape), tuple(other_shape))
    if tuple(b) != tuple(out_shape):
        raise RuntimeError(f"output with shape {list(out_shape)} doesn't match the broadcast "
                           f"shape {list(b)}")


def norm_dtypes(x, kernel, params):
    """A norm's floating input (else ``kernel``'s error); on the CPU the affine parameters and
    statistics share its dtype."""
    require_float(x, kernel)
    dt = x._data.dtype
    for p in params:
        if p is not None and p._data.dtype != dt:
            if dt == np.float32:
                raise RuntimeError(
                    "mixed dtype (CPU): expect parameter to have scalar type of Float")
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def not_differentiable(fn, **args):
    """PyTorch's refusal of a grad-requiring argument its backward has no formula for."""
    if state.enabled:
        for name, t in args.items():
            if t is not None and t._requires_grad:
                raise RuntimeError(f"The function '{fn}' is not differentiable with respect to "
                                   f"argument '{name}'. This input cannot have requires_grad "
                                   "True.")
