"""The argument checks of ``numgrad.nn.functional``'s modules, in one place: PyTorch's argument
parser's TypeErrors (a tensor, an int, an int list, a bool, a float, a Number where one is
required) and the messages shared by several layers. The parsers of ``functional.py`` itself
are re-exported here under their plain names; the others are defined here."""

from numgrad.nn.functional import _bool_arg as bool_arg  # noqa: F401
from numgrad.nn.functional import _float_arg as float_arg  # noqa: F401
from numgrad.nn.functional import _int_arg as int_arg  # noqa: F401
from numgrad.nn.functional import _int_list as int_list
from numgrad.nn.functional import _is_int as is_int
from numgrad.nn.functional import _not_implemented as not_implemented  # noqa: F401
from numgrad.nn.functional import _tensor_arg as tensor_arg
from numgrad.ops._util import dtype_of

__all__ = ["bool_arg", "float_arg", "int_arg", "int_list", "is_int", "not_implemented",
           "tensor_arg", "number_arg", "optional_number", "type_name", "conv_tensors",
           "int_tuple"]

_NUMBERS = None


def number_arg(fn, name, pos, v):
    """A Number argument (int or float, not bool)."""
    global _NUMBERS
    if _NUMBERS is None:
        import numpy as np
        _NUMBERS = (int, float, np.integer, np.floating)
    if isinstance(v, bool) or not isinstance(v, _NUMBERS):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Number, not "
                        f"{type(v).__name__}")
    return v


def optional_number(fn, name, v, kind):
    """An optional int or float keyword argument (None passes), named ``kind`` in the
    message."""
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
        raise TypeError(f"{fn}(): argument '{name}' must be {kind}, not {type(v).__name__}")
    return v


def type_name(t):
    """A tensor's legacy type name, as PyTorch's convolution messages print it."""
    return f"torch.{dtype_of(t)._legacy}Tensor"


def conv_tensors(fn, input, weight, bias):
    """A convolution's input, weight and optional bias must be tensors."""
    tensor_arg(fn, "input", 1, input)
    tensor_arg(fn, "weight", 2, weight)
    if bias is not None:
        tensor_arg(fn, "bias", 3, bias)


def int_tuple(fn, name, pos, v, n):
    """An ``int[n]`` argument: an int stands for all ``n``; a sequence is kept as given (its
    length checked by the caller)."""
    t = int_list(v, fn, name, pos)
    return t * n if is_int(v) else t
