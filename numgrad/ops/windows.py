"""``Tensor.unfold(dimension, size, step)``: the windows of ``size`` elements every ``step``
along one dim, as a strided view of the input (a new last dim runs along each window), as in
PyTorch. Its backward sums each window's gradient back onto the elements it covers (a line
kernel of ``numgrad.kernels.lines``, both devices); the backward of that is unfold again."""

import operator

from numgrad import _arrays
from numgrad._shape import wrap_dim
from numgrad.autograd.graph import Node
from numgrad.kernels import LazyKernels
from numgrad.ops import shape as sh
from numgrad.ops._util import Tensor, _wrap, attach, edge, state
from numgrad.ops.registry import declare

LINES = LazyKernels("lines")


def _int_arg(v, arg, pos):
    if v.__class__ is bool or not isinstance(v, int):
        try:
            return operator.index(v)
        except TypeError:
            raise TypeError(f"unfold(): argument '{arg}' (position {pos}) must be int, not "
                            f"{type(v).__name__}") from None
    return v


def _windows_view(arr, d, size, step):
    """The unfold view of array ``arr`` (at least 1-D) along dim ``d``."""
    shape, strides = arr.shape, arr.strides
    windows = (shape[d] - size) // step + 1
    out_shape = shape[:d] + (windows,) + shape[d + 1:] + (size,)
    out_strides = strides[:d] + (strides[d] * step,) + strides[d + 1:] + (strides[d],)
    return _arrays.as_strided(arr, out_shape, out_strides)


class UnfoldBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dimension", "self_sym_sizes", "size", "step")
    _meta_only = True

    # d/dx_i sum_w,k g[w, k] x[w*step + k] = sum of g[w, k] over w*step + k = i
    def _backward(self, g):
        dimension, shape, size, step = self._saved
        return (unfold_backward(g, shape, wrap_dim(dimension, max(len(shape), 1)), size,
                                step),)


class UnfoldBackwardBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("dim", "size", "step")
    _meta_only = True

    # d/dg unfold_backward(g) = unfold(gg): the adjoint of the adjoint
    def _backward(self, gg):
        d, size, step = self._saved
        return (unfold(gg, d, size, step),)


def unfold_backward(g, shape, d, size, step):
    """Zeros of ``shape`` plus each window of ``g`` (shape of the unfold) on what it covers."""
    if not shape:  # a 0-d input's unfold is 1-D of length size (0 or 1)
        lines_shape = (1, 1, 1)
        g4 = sh.reshape(g, (1, 1, 1, size))
    else:
        outer = 1
        for n in shape[:d]:
            outer *= n
        inner = 1
        for n in shape[d + 1:]:
            inner *= n
        lines_shape = (outer, shape[d], inner)
        g4 = sh.reshape(g, (outer, g.shape[d], inner, size))
    ga = _arrays.contiguous(g4._data)
    out_arr = _arrays.empty(ga, lines_shape, ga.dtype)
    LINES.unfold_backward_4d(ga, out_arr, step)
    out = _wrap(out_arr.reshape(tuple(shape)))
    if state.enabled and g._requires_grad:
        attach(out, UnfoldBackwardBackward0((edge(g),), (d, size, step)))
    return out


@declare(nodes=("UnfoldBackward0",), variants=("method",))
def unfold(input, dimension, size, step):
    """The windows of ``size`` elements, one every ``step``, along ``dimension``: a view with
    that dim counting windows and a new last dim of length ``size``."""
    if not isinstance(input, Tensor):
        raise TypeError("unfold(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dimension = _int_arg(dimension, "dimension", 1)
    size = _int_arg(size, "size", 2)
    step = _int_arg(step, "step", 3)
    x = input._data
    d = wrap_dim(dimension, max(x.ndim, 1))
    n = x.shape[d] if x.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                           f"{size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if x.ndim:
        arr = _windows_view(x, d, size, step)
    else:
        arr = _arrays.as_strided(x, (size,), (x.itemsize,))
    out = sh.view_of(input, arr)
    if state.enabled and input._requires_grad:
        attach(out, UnfoldBackward0((edge(input),), (dimension, x.shape, size, step)))
    return out
