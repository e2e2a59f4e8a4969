"""``numgrad.nn.functional``'s pooling: max, average, adaptive, power-average (lp) pooling
in 1, 2 and 3 dims and max unpooling, with PyTorch's argument parsing; the shape checks and
the math are ``numgrad.ops.nn_pool``'s. 1-d pooling is 2-d pooling on a unit height (as
PyTorch does, so the node is ``SqueezeBackward1``), lp pooling an average pool of x^p scaled
back to a sum and taken to the 1/p (a max pool of |x| at p = inf)."""


from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.ops import nn_pool as NP
from numgrad.ops import shape as sh


def _what(n, words):
    """pool_args's messages for a wrong length: ``words`` with "or a tuple of {n} ints"."""
    return tuple(w and f"{w}, or a tuple of {('two', 'three')[n - 2]} ints" for w in words)


_MAX_WHAT = ("kernel_size must either be a single int", "stride must either be omitted, a single "
             "int", "padding must either be a single int", "dilation must be either a single int")
_AVG_WHAT = {2: _MAX_WHAT, 3: ("kernel_size must be a single int", "stride must be omitted, a "
                               "single int", "padding must be a single int", "")}


def _max_pool(n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    fn = f"max_pool{n}d"
    C.tensor_arg(fn, "input", 1, input)
    k, s, p, d = C.pool_args(fn, n, kernel_size, stride, padding, dilation, _what(n, _MAX_WHAT))
    ceil_mode = C.bool_arg(ceil_mode, fn, "ceil_mode", 6)
    return NP.max_pool(input, k, s, p, d, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, H, W) or unbatched (C, H, W) input
    (``MaxPool2DWithIndicesBackward0``)."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, D, H, W) or (C, D, H, W) input."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    fn = f"avg_pool{n}d"
    C.tensor_arg(fn, "input", 1, input)
    k, s, p, _ = C.pool_args(fn, n, kernel_size, stride, padding, 1, _what(n, _AVG_WHAT[n]))
    flags = _avg_flags(fn, ceil_mode, count_include_pad, divisor_override)
    return NP.avg_pool(input, k, s, p, *flags)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Window means over (N, C, H, W) or unbatched (C, H, W) input (``AvgPool2DBackward0``)."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Window means over (N, C, D, H, W) or (C, D, H, W) input."""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _avg_flags(fn, ceil_mode, count_include_pad, divisor_override):
    """An average pool's ceil_mode, count_include_pad and divisor_override arguments."""
    ceil_mode = C.bool_arg(ceil_mode, fn, "ceil_mode", 5)
    count_include_pad = C.bool_arg(count_include_pad, fn, "count_include_pad", 6)
    if divisor_override is not None:
        divisor_override = C.int_arg(divisor_override, fn, "divisor_override", 7)
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    return ceil_mode, count_include_pad, divisor_override


def _one_int(fn, name, v, pos, allow_empty=False):
    """A pool argument that must hold one int (an int or a one-element list)."""
    vals = C.int_list(v, fn, name, pos)
    if len(vals) != 1 and not (allow_empty and not vals):
        raise RuntimeError(f"{fn}() argument '{name}' should contain one int (got {len(vals)})")
    return vals


def _adaptive_size(fn, input, output_size, n):
    """An adaptive pool's output size as ``n`` ints: ``None`` entries keep the input's size,
    one int stands for all ``n`` (PyTorch's len() of anything else first, so a string is a
    sequence of its characters)."""
    if isinstance(output_size, str):
        output_size = list(output_size)
    if not isinstance(output_size, (list, tuple)) and (
            output_size is None or not C.is_int(output_size)):
        raise TypeError(f"object of type '{type(output_size).__name__}' has no len()")
    shape = input._data.shape
    if isinstance(output_size, (list, tuple)):
        if len(shape) <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        output_size = [v if v is not None else dflt
                       for v, dflt in zip(output_size, shape[-len(output_size):])]
    size = C.int_list(output_size, fn, "output_size", 2)
    return size * n if len(size) == 1 and not isinstance(output_size, (list, tuple)) else size


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) along the last dim."""
    return NP.lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode, F)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) over the last two dims."""
    return NP.lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode, F)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) over the last three dims."""
    return NP.lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode, F)


def _unpool_args(fn, input, kernel_size, stride, padding, output_size, nd):
    C.tensor_arg(fn, "input", 1, input)
    k = NP.as_n(kernel_size, nd)
    s = k if stride is None else NP.as_n(stride, nd)
    p = NP.as_n(padding, nd)
    size = NP.unpool_size(input, k, s, p, output_size)
    return list(C.int_list(list(size), fn, "output_size", 3)), s, p


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, L) or (C, L): max_pool2d on a unit height."""
    C.tensor_arg("max_pool1d", "input", 1, input)
    k = C.int_list(kernel_size, "max_pool1d", "kernel_size", 2)
    s = () if stride is None else C.int_list(stride, "max_pool1d", "stride", 3)
    p = C.int_list(padding, "max_pool1d", "padding", 4)
    d = C.int_list(dilation, "max_pool1d", "dilation", 5)
    ceil_mode = C.bool_arg(ceil_mode, "max_pool1d", "ceil_mode", 6)
    out, idx = NP.max_pool1d(input, k, s, p, d, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Window means over (N, C, L) or (C, L): avg_pool2d on a unit height."""
    C.tensor_arg("avg_pool1d", "input", 1, input)
    NP.dim_range("avg_pool1d", input, 2, 3)
    k = _one_int("avg_pool1d", "kernel_size", kernel_size, 2)[0]
    s = _one_int("avg_pool1d", "stride", () if stride is None else stride, 3, True)
    p = _one_int("avg_pool1d", "padding", padding, 4)[0]
    s = s[0] if s else k
    ceil_mode = C.bool_arg(ceil_mode, "avg_pool1d", "ceil_mode", 5)
    count_include_pad = C.bool_arg(count_include_pad, "avg_pool1d", "count_include_pad", 6)
    out = avg_pool2d(sh.unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode,
                     count_include_pad)
    return sh.squeeze(out, -2)


def adaptive_avg_pool2d(input, output_size):
    """Means over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) input."""
    C.attribute(input, "size")
    size = _adaptive_size("adaptive_avg_pool2d", input, output_size, 2)
    return NP.adaptive_avg_pool(input, size, 2)


def adaptive_avg_pool3d(input, output_size):
    """Means over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input."""
    C.tensor_arg("adaptive_avg_pool3d", "input", 1, input)
    size = _adaptive_size("adaptive_avg_pool3d", input, output_size, 3)
    return NP.adaptive_avg_pool(input, size, 3)


def adaptive_avg_pool1d(input, output_size):
    """Means over PyTorch's adaptive windows along the last dim."""
    C.tensor_arg("adaptive_avg_pool1d", "input", 1, input)
    NP.dim_range("adaptive_avg_pool1d", input, 2, 3)
    o = _one_int("adaptive_avg_pool1d", "output_size", output_size, 2)[0]
    return sh.squeeze(adaptive_avg_pool2d(sh.unsqueeze(input, -2), (1, o)), -2)


def adaptive_max_pool2d(input, output_size, return_indices=False, _fn="adaptive_max_pool2d",
                        _shown=None):
    """Maxima over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) input; an output
    size of 0 gives an empty result (``_fn``/``_shown``: the 1-D caller's name and shape)."""
    C.attribute(input, "size")
    size = _adaptive_size("adaptive_max_pool2d", input, output_size, 2)
    return NP.adaptive_max_pool(input, size, 2, return_indices, _fn, _shown)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maxima over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input."""
    C.tensor_arg("adaptive_max_pool3d", "input", 1, input)
    size = _adaptive_size("adaptive_max_pool3d", input, output_size, 3)
    return NP.adaptive_max_pool(input, size, 3, return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maxima over PyTorch's adaptive windows along the last dim."""
    C.tensor_arg("adaptive_max_pool1d", "input", 1, input)
    NP.dim_range("adaptive_max_pool1d", input, 2, 3)
    o = _one_int("adaptive_max_pool1d", "output_size", output_size, 2)[0]
    out, idx = adaptive_max_pool2d(sh.unsqueeze(input, -2), (1, o), True,
                                   "adaptive_max_pool1d", input._data.shape)
    out, idx = sh.squeeze(out, -2), sh.squeeze(idx, -2)
    return (out, idx) if return_indices else out


def _max_unpool(n, input, indices, kernel_size, stride, padding, output_size):
    size, s, _ = _unpool_args("max_unpool3d" if n == 3 else "max_unpool2d", input, kernel_size,
                              stride, padding, output_size, n)
    return NP.max_unpool(input, indices, size, n, s)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: zeros except the maxima at their indices."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: zeros except the maxima at their indices."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: zeros except the maxima at their indices."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def _with_indices(pool, n):
    """PyTorch's ``<pool>_with_indices``: ``pool`` (``n`` arguments before ``return_indices``)
    giving its maxima and their indices, whatever ``return_indices`` says."""
    def with_indices(*args, return_indices=False, **kwargs):
        return pool(*args[:n], **kwargs, return_indices=True)
    with_indices.__name__ = with_indices.__qualname__ = pool.__name__ + "_with_indices"
    return with_indices


max_pool1d_with_indices = _with_indices(max_pool1d, 6)
max_pool2d_with_indices = _with_indices(max_pool2d, 6)
max_pool3d_with_indices = _with_indices(max_pool3d, 6)
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d, 2)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d, 2)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d, 2)
