"""Tensor ``repr`` in PyTorch's format: 4 decimals, integer mode (``1.``), scientific notation
when values span more than 1000x or leave [1e-4, 1e8), 80-column wrapping, ``...`` summaries
beyond 1000 elements, and the ``dtype=``/``grad_fn=``/``requires_grad=`` suffixes."""

import math

import numpy as np


class PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    """Chooses one format (int mode, fixed or scientific) and width for all elements; the
    width comes from the finite nonzero values only, as in PyTorch."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if finite:
            absvals = [abs(v) for v in finite]
            vmin, vmax = min(absvals), max(absvals)
            self.int_mode = all(v == math.ceil(v) for v in finite)
            if self.int_mode:
                if vmax / vmin > 1000.0 or vmax > 1.0e8:
                    self.sci_mode = True
                    strs = [f"{v:.{p}e}" for v in finite]
                else:
                    strs = [f"{v:.0f}." for v in finite]
            elif vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4:
                self.sci_mode = True
                strs = [f"{v:.{p}e}" for v in finite]
            else:
                strs = [f"{v:.{p}f}" for v in finite]
            self.max_width = max(len(s) for s in strs)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def width(self):
        return self.max_width

    def format(self, v):
        p = PRINT_OPTS.precision
        if not self.floating:
            s = str(v)
        elif self.sci_mode:
            s = f"{v:{self.max_width}.{p}e}"
        elif self.int_mode:
            s = f"{v:.0f}"
            if math.isfinite(v):
                s += "."
        else:
            s = f"{v:.{p}f}"
        return (self.max_width - len(s)) * " " + s


def _summarized_values(a, summarize):
    """The values the formatter sees: everything, or the edges when summarizing."""
    if not summarize or a.ndim == 0:
        return a.reshape(-1).tolist()
    e = PRINT_OPTS.edgeitems
    if a.ndim == 1:
        if a.shape[0] > 2 * e:
            return a[:e].tolist() + a[-e:].tolist()
        return a.tolist()
    rows = list(range(a.shape[0]))
    if a.shape[0] > 2 * e:
        rows = rows[:e] + rows[-e:]
    out = []
    for r in rows:
        out.extend(_summarized_values(a[r], summarize))
    return out


def _vector_str(a, indent, summarize, fmt):
    element_length = fmt.width() + 2
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    e = PRINT_OPTS.edgeitems
    vals = a.tolist()
    if summarize and len(vals) > 2 * e:
        data = [fmt.format(v) for v in vals[:e]] + [" ..."] + [fmt.format(v) for v in vals[-e:]]
    else:
        data = [fmt.format(v) for v in vals]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a, indent, summarize, fmt):
    dim = a.ndim
    if dim == 0:
        return fmt.format(a.item())
    if dim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    n = a.shape[0]
    if summarize and n > 2 * e:
        slices = ([_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                  + [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(n - e, n)])
    else:
        slices = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(tensor_str, suffixes, indent):
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        n = len(suffix)
        if last_line_len + n + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + n
        else:
            parts.append(", " + suffix)
            last_line_len += n + 2
    parts.append(")")
    return "".join(parts)


def format_array(a, indent):
    """The bracketed body of a tensor's repr (no prefix or suffixes)."""
    floating = a.dtype.kind == "f"
    summarize = a.size > PRINT_OPTS.threshold
    values = _summarized_values(a, summarize)
    if a.dtype.kind == "b":
        values = [bool(v) for v in values]
    fmt = _Formatter(values, floating)
    return _tensor_str(a, indent, summarize, fmt)


def tensor_repr(t, prefix="tensor("):
    from numgrad import _dtype
    a = t._data
    indent = len(prefix)
    suffixes = []
    if a.__class__ is not np.ndarray:  # CUDA data is printed from a host copy
        suffixes.append("device='cuda:0'")
        a = a.to_host()
    dt = t.dtype
    if a.dtype.kind == "V":  # bfloat16 bit patterns: print their (exact) float32 values
        from numgrad import _half
        a = _half.to_float32(a)
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append(f"size={tuple(a.shape)}")
        body = "[]"
    else:
        body = format_array(a, indent)
    if dt not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_) or (
            a.size == 0 and dt is not _dtype.get_default_dtype()):
        suffixes.append(f"dtype={dt!r}")
    fn = t._grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{type(fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


__all__ = ["set_printoptions", "tensor_repr", "format_array", "PRINT_OPTS", "np"]
