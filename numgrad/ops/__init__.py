"""Every op, and the binding of Tensor methods and operators to them."""

import numpy as np

from numgrad import _dtype
from numgrad.kernels._parallel import ELEMENTWISE, pick
from numgrad.ops import (  # noqa: F401  (they declare their ops)
    activation,
    attention,
    batch_norm,
    compare,
    conv_transpose,
    diagonal,
    distance,
    einsum,
    embedding,
    embedding_bag,
    fused,
    gelu,
    grids,
    group_norm,
    index_ops,
    inplace,
    lines,
    losses,
    nn_losses,
    norms,
    products,
    recurrent,
    registry,
    reorder,
    repeat,
    resample,
    sampling,
    scatter,
    selection,
    statistics,
    unary,
    windows,
)
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops import linalg as la
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, is_scalar
from numgrad.tensor import Tensor

_ND = np.ndarray  # data of any other class is on the GPU


def _add_inplace_raw(self, other):
    """self += other without recording or checks (the engine's gradient accumulation)."""
    a = self._data
    b = other._data
    if (a.__class__ is _ND and b.__class__ is _ND and a.dtype is b.dtype
            and a.shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous):
        k = EW.add
        pick(k.flat, k.flat_par, a.size, ELEMENTWISE)(a.ravel(), b.ravel(), a.ravel(),
                                                             0.0, 0.0)
    else:
        EW.binary(EW.add, a, b, a.dtype, a.shape, out=a)
    self._bump_version()


# ----------------------------------------------------------------------------------------
# Tensor methods
# ----------------------------------------------------------------------------------------


def _binop(fn):
    tensors = getattr(fn, "tensors", None)  # a declared binary op's own two fast forms
    number = getattr(fn, "with_number", None)

    def op(self, other):
        if tensors is not None and self.__class__ is Tensor:
            if other.__class__ is Tensor:
                return tensors(self, other, 1)
            if number is not None and (other.__class__ is float or other.__class__ is int):
                return number(self, other, 1)
        if isinstance(other, Tensor) or is_scalar(other) or isinstance(other, np.ndarray):
            return fn(self, other)
        return NotImplemented
    op.__name__ = fn.__name__
    return op


def _rbinop(fn):
    def op(self, other):
        if is_scalar(other) or isinstance(other, np.ndarray):
            return fn(other, self)
        return NotImplemented
    op.__name__ = fn.__name__
    return op


def _type_conv(dt):
    def conv(self, memory_format=None):
        return sh.to_dtype(self, dt)
    return conv


# dtype conversions and the engine's accumulation (every op's method comes from the registry)
_METHODS = {
    "float": _type_conv(_dtype.float32), "double": _type_conv(_dtype.float64),
    "long": _type_conv(_dtype.int64), "int": _type_conv(_dtype.int32),
    "bool": _type_conv(_dtype.bool_), "short": _type_conv(_dtype.int16),
    "byte": _type_conv(_dtype.uint8), "char": _type_conv(_dtype.int8),
    "half": _type_conv(_dtype.float16), "bfloat16": _type_conv(_dtype.bfloat16),
    "_add_inplace_raw": _add_inplace_raw,
}

_OPERATORS = {
    "__add__": _binop(ew.add), "__radd__": _rbinop(ew.add),
    "__sub__": _binop(ew.sub), "__rsub__": _rbinop(ew.sub),
    "__mul__": _binop(ew.mul), "__rmul__": _rbinop(ew.mul),
    "__truediv__": _binop(ew.div), "__rtruediv__": _rbinop(ew.div),
    "__floordiv__": _binop(ew.floor_divide), "__rfloordiv__": _rbinop(ew.floor_divide),
    "__mod__": _binop(ew.remainder), "__rmod__": _rbinop(ew.remainder),
    "__pow__": _binop(ew.pow), "__rpow__": _rbinop(ew.pow),
    "__matmul__": _binop(la.matmul), "__rmatmul__": _rbinop(la.matmul),
    "__eq__": _binop(ew.eq), "__ne__": _binop(ew.ne), "__lt__": _binop(ew.lt),
    "__le__": _binop(ew.le), "__gt__": _binop(ew.gt), "__ge__": _binop(ew.ge),
    "__and__": _binop(ew.bitwise_and), "__or__": _binop(ew.bitwise_or),
    "__xor__": _binop(ew.bitwise_xor), "__rand__": _rbinop(ew.bitwise_and),
    "__ror__": _rbinop(ew.bitwise_or), "__rxor__": _rbinop(ew.bitwise_xor),
    "__lshift__": _binop(ew.bitwise_left_shift), "__rshift__": _binop(ew.bitwise_right_shift),
    "__rlshift__": _rbinop(ew.bitwise_left_shift),
    "__rrshift__": _rbinop(ew.bitwise_right_shift),
    "__invert__": ew.invert, "__neg__": unary.neg, "__abs__": unary.abs,
    "__pos__": lambda self: self, "__getitem__": ix.getitem,
}

for _name, _fn in {**_METHODS, **_OPERATORS, **inplace.METHODS, **registry.methods()}.items():
    setattr(Tensor, _name, _fn)

Tensor.T = property(sh.T)
Tensor.mT = property(sh.mT)
Tensor.__hash__ = object.__hash__

__all__ = ["ew", "red", "sh", "ix", "la", "inplace"]
