"""PyTorch's argument parsing, shared by every ``numgrad.nn.functional`` function before it
calls an op: the argument parser's TypeErrors (a tensor, an int, an int list, a bool, a float,
a Number where one is required), int-or-tuple arguments as ``n`` ints, and the reduction
string with the legacy ``size_average``/``reduce`` flags. The checks the kernels make of
their arguments are the ops' own (``numgrad.ops.nn_checks`` and the ``nn_*`` op modules)."""

import functools
import operator
import warnings

import numpy as np

from numgrad import _dtype
from numgrad._shape import Size
from numgrad.ops._util import Tensor

_NUMBERS = (int, float, np.integer, np.floating)


def parse_error(msg, restate):
    """A TypeError of PyTorch's argument parser; ``restate(args, kwargs)``: its words for a
    call with those arguments, where they differ (else None)."""
    e = TypeError(msg)
    e.restate = restate
    return e


def arg_error(msg, name, pos, keyword=None):
    """The parser's TypeError about argument ``name``, worded for one given at position
    ``pos``; PyTorch words it ``keyword`` (by default: without the position) for one given by
    keyword."""
    keyword = keyword or msg.replace(f" (position {pos})", "", 1)
    return parse_error(msg, lambda args, kwargs: keyword if name in kwargs else None)


def keywords(fn):
    """``fn`` (one PyTorch binds in C, whose parser sees how each argument came) with its
    parser errors restated for the call's arguments."""
    @functools.wraps(fn)
    def parsed(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            msg = e.restate(args, kwargs) if hasattr(e, "restate") else None
            if msg is None:
                raise
            raise TypeError(msg) from None
    return parsed


def must_be(fn, name, pos, kind, v):
    """The parser's TypeError for a ``v`` not of ``kind``; ``pos`` None: an argument PyTorch
    receives by keyword (worded without a position)."""
    at = "" if pos is None else f" (position {pos})"
    return arg_error(f"{fn}(): argument '{name}'{at} must be {kind}, not {type(v).__name__}",
                     name, pos)


def tensor_arg(fn, name, pos, t):
    """The argument parser's TypeError for a non-tensor where a tensor is required."""
    if not isinstance(t, Tensor):
        raise must_be(fn, name, pos, "Tensor", t)


def opt_tensor(fn, name, pos, t):
    """A ``Tensor?`` argument: None passes."""
    if t is not None and not isinstance(t, Tensor):
        raise must_be(fn, name, pos, "Tensor", t)


def tensors(fn, names, *ts):
    """Tensor arguments at positions 1, 2, ..., named by the words of ``names``; from the
    third on, None (an optional one omitted) passes."""
    for pos, (name, t) in enumerate(zip(names.split(), ts), 1):
        if pos < 3 or t is not None:
            tensor_arg(fn, name, pos, t)


def is_int(v):
    if isinstance(v, (int, np.integer)):
        return True
    if isinstance(v, (float, str, bytes, list, tuple, np.floating)) or v is None:
        return False
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def int_list(v, fn, name, pos):
    """``v`` (an int or a sequence of ints) as a tuple of ints, with the TypeErrors of
    PyTorch's argument parser for an ``int[]`` argument."""
    if type(v) is int:
        return (v,)
    if type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int:
        return v
    if isinstance(v, (list, tuple)):
        for i, e in enumerate(v):
            if (i == 0 and isinstance(e, bool)) or not is_int(e):
                if i == 0:
                    raise arg_error(f"{fn}(): argument '{name}' (position {pos}) must be tuple "
                                    f"of ints, but found element of type {type(e).__name__} at "
                                    "pos 0", name, pos, f"{fn}(): argument '{name}' must be "
                                    f"tuple of ints, not {type(v).__name__}")
                raise TypeError(f"{fn}(): argument '{name}' failed to unpack the object at pos "
                                f"{i + 1} with error \"type must be tuple of ints,but got "
                                f"{type(e).__name__}\"")
        return tuple(int(e) for e in v)
    if isinstance(v, bool) or not is_int(v):
        raise must_be(fn, name, pos, "tuple of ints", v)
    return (int(v),)


def pair(v):
    """``torch.nn.modules.utils._pair``: an iterable as a tuple, anything else twice."""
    if isinstance(v, (list, tuple)) or (hasattr(v, "__iter__") and not isinstance(v, Tensor)):
        return tuple(v)
    return (v, v)


def int_tuple(fn, name, pos, v, n):
    """An ``int[n]`` argument: an int stands for all ``n``; a sequence is kept as given (its
    length checked by the caller)."""
    t = int_list(v, fn, name, pos)
    return t * n if is_int(v) else t


def pool_args(fn, n, kernel_size, stride, padding, dilation, what):
    """A pool's kernel_size, stride (omitted: the kernel's), padding and dilation as ``n``
    ints each: the argument parser's TypeErrors first, then ``fn: {what[i]}`` for a length
    other than 1 or ``n``."""
    k = int_list(kernel_size, fn, "kernel_size", 2)
    s = () if stride is None else int_list(stride, fn, "stride", 3)
    p = int_list(padding, fn, "padding", 4)
    d = int_list(dilation, fn, "dilation", 5)
    for v, ok, msg in zip((k, s, p, d), ((1, n), (0, 1, n), (1, n), (1, n)), what):
        if len(v) not in ok:
            raise RuntimeError(f"{fn}: {msg}")
    k, s, p, d = (v * n if len(v) == 1 else tuple(v) for v in (k, s, p, d))
    return k, s or k, p, d


def int_arg(v, fn, name, pos, kind="int"):
    if isinstance(v, bool) or not is_int(v):
        raise must_be(fn, name, pos, kind, v)
    return int(v)


def _scalar_tensor(v):
    """A 0-d tensor that does not require grad: PyTorch's parser takes it for a number."""
    return isinstance(v, Tensor) and v._data.ndim == 0 and not v._requires_grad


def float_arg(v, fn, name, pos):
    """A ``float`` argument: an int, a float, a bool or a 0-d tensor (as PyTorch's parser)."""
    if v.__class__ is float:
        return v
    if not isinstance(v, _NUMBERS) and not isinstance(v, bool):
        if not _scalar_tensor(v):
            raise must_be(fn, name, pos, "float", v)
        v = v.item()
    return float(v)


def shape_arg(v, fn, name, pos):
    """An ``int[]`` argument without a size (a shape): ints in a list or tuple, a lone int
    refused (``int_list`` takes one for ``int[n]``)."""
    if v.__class__ is tuple:
        for e in v:
            if e.__class__ is not int:
                break
        else:
            return v
    if not isinstance(v, (list, tuple)):
        raise must_be(fn, name, pos, "tuple of ints", v)
    return int_list(v, fn, name, pos)


def str_arg(v, fn, name, pos):
    if not isinstance(v, str):
        raise must_be(fn, name, pos, "str", v)
    return v


def attribute(v, name):
    """The AttributeError PyTorch's Python raises where it calls ``v.name()`` on a non-tensor
    (its losses' ``target.size()``, softmax's ``input.softmax``)."""
    if not isinstance(v, Tensor):
        raise AttributeError(f"'{type(v).__name__}' object has no attribute '{name}'")


def has_size(*ts):
    """A loss's Python ``t.size()`` of each (a weight: if given), in order."""
    for i, t in enumerate(ts):
        if i < 2 or t is not None:
            attribute(t, "size")


def softmax_args(fn, input, dim, dtype, stacklevel):
    """softmax's, log_softmax's and softmin's (input, dim, dtype) as PyTorch's Python takes
    them: the implicit dim for None (deprecated, with its warning), then the method call (on
    ``-input`` for softmin) and its parser."""
    if dim is None:
        nd = input.dim()
        warnings.warn(f"Implicit dimension choice for {fn} has been deprecated. Change the call "
                      "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
        dim = 0 if nd in (0, 1, 3) else 1
    method = "softmax" if fn == "softmin" else fn
    if not isinstance(input, Tensor):  # (softmin negates first: a str or None fails there)
        attribute(-input if fn == "softmin" else input, method)
    return input, int_arg(dim, method, "dim", 1), _dtype.arg(dtype, method)


def bool_arg(v, fn, name, pos):
    if v.__class__ is bool:
        return v
    if not isinstance(v, (bool, np.bool_)):
        raise must_be(fn, name, pos, "bool", v)
    return bool(v)


def number_arg(fn, name, pos, v):
    """A Number argument (int, float or bool; a bool counts as the int 0 or 1)."""
    if not isinstance(v, _NUMBERS):
        if isinstance(v, (bool, np.bool_)):
            return int(v)
        raise must_be(fn, name, pos, "Number", v)
    return v


def numbers(fn, input, **args):
    """``fn(Tensor input, Number a, Number b, ...)``: a tensor, then each Number in order."""
    tensor_arg(fn, "input", 1, input)
    for pos, (name, v) in enumerate(args.items(), 2):
        number_arg(fn, name, pos, v)


def optional_number(fn, name, v, kind):
    """An optional int or float keyword argument (None passes), named ``kind`` in the
    message."""
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
        raise TypeError(f"{fn}(): argument '{name}' must be {kind}, not {type(v).__name__}")
    return v


def reduction(reduction, size_average=None, reduce=None):
    """The reduction string, from the deprecated size_average/reduce flags if given; an
    invalid string raises PyTorch's ValueError."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else ("sum" if reduce else "none")
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", stacklevel=3)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", stacklevel=3)
        return "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def sizes(input, target):
    """A loss's Python ``target.size()`` and ``input.size()`` (their AttributeError), then
    its warning for different sizes."""
    attribute(target, "size")
    attribute(input, "size")
    if input._data.shape != target._data.shape:
        warnings.warn(
            f"Using a target size ({Size(target._data.shape)}) that is different to the input "
            f"size ({Size(input._data.shape)}). This will likely lead to incorrect results due "
            "to broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=4)


_PARSERS = {
    "Tensor": lambda v, fn, name, pos: v if isinstance(v, Tensor) else tensor_arg(fn, name, pos, v),
    "Tensor?": lambda v, fn, name, pos: (v if v is None or isinstance(v, Tensor)
                                         else opt_tensor(fn, name, pos, v)),
    "Number": lambda v, fn, name, pos: number_arg(fn, name, pos, v),
    "int": int_arg, "float": float_arg, "bool": bool_arg, "int[]": shape_arg, "str": str_arg,
    "float?": lambda v, fn, name, pos: None if v is None else float_arg(v, fn, name, pos),
}


@functools.cache
def _signature(spec, first):
    args = (a.split() for a in spec.split(","))
    return tuple((_PARSERS[kind], name.lstrip("*"), None if name[0] == "*" else pos)
                 for pos, (kind, name) in enumerate(args, first))


def parse(fn, spec, *values, first=1):
    """``values`` parsed as PyTorch's parser does ``fn``'s arguments, declared by ``spec``
    (``"Tensor input, int[] normalized_shape, Tensor? weight, float eps"``; kinds: Tensor,
    Tensor?, int, float, float?, bool, int[]; a name marked ``*name``: one PyTorch's Python
    passes by keyword) from position ``first``: the TypeError of the first bad one, else the
    values as the op takes them."""
    return [check(v, fn, name, pos) for (check, name, pos), v in zip(_signature(spec, first),
                                                                      values)]


# signatures of PyTorch's C functions, as it declares them
LAYER_NORM = "Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps"
RMS_NORM = "Tensor input, int[] normalized_shape, Tensor? weight, float? eps"
GROUP_NORM = "Tensor input, int num_groups, Tensor? weight, Tensor? bias, float eps"
BATCH_NORM = ("Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
              "Tensor? running_var, bool training, float momentum, float eps")
INSTANCE_NORM = BATCH_NORM.replace("training", "use_input_stats")
DROPOUT = "Tensor input, float p, bool train"
BILINEAR = "Tensor input1, Tensor input2, Tensor weight, Tensor? bias"
BCE = "Tensor input, Tensor target, Tensor? weight"
EMBEDDING = "Tensor weight, Tensor indices, int padding_idx, bool scale_grad_by_freq, bool sparse"
RENORM = "Tensor self, Tensor indices, float max_norm, float norm_type"
POISSON_NLL = "Tensor input, Tensor target, bool log_input, bool full, float eps"
TRIPLE_MARGIN = "Tensor input1, Tensor input2, Tensor target, float margin"
TRIPLET = ("Tensor anchor, Tensor positive, Tensor negative, float margin, float p, float eps, "
           "bool swap")
MULTI_MARGIN = "Tensor input, Tensor target, Number p, Number margin, Tensor? weight"
KL_DIV = "Tensor input, Tensor target, bool *log_target"
COSINE = "Tensor x1, Tensor x2, int dim, float eps"
PAIRWISE = "Tensor x1, Tensor x2, float p, float eps, bool keepdim"


def check_p(p):
    """The dropouts' Python check of their probability, before their C function's parse."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout_args(fn, input, p, training, inplace):
    """A dropout's (input, p, train) as PyTorch takes them: p checked in Python, then parsed
    as the arguments of ``fn`` (``fn_`` in place)."""
    check_p(p)
    return parse(fn + "_" if inplace else fn, DROPOUT, input, p, training)
