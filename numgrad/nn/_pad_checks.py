"""F.pad's size checks, in PyTorch's order and with its messages, run before any kernel.

Sizes are computed as PyTorch computes them, in int64 (a width of 2**62 wraps the output size
negative there, and so it does here); every padded dim of a reflect/replicate input must be
non-empty, reflect widths must be smaller than the dim, circular ones at most the dim.
"""

_UNSUPPORTED = ("Padding size {n} is not supported for {nd}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
_KERNEL = {"reflect": "reflection_pad", "replicate": "replication_pad"}


def _i64(v):
    """``v`` wrapped to int64, as C++ arithmetic on sizes wraps."""
    return ((v + (1 << 63)) % (1 << 64)) - (1 << 63)


def check_widths(widths):
    """The argument parser's limits on an ``int[]``: every width fits in int64."""
    for i, w in enumerate(widths):
        if not -(1 << 63) <= w < (1 << 63):
            raise TypeError(f"pad(): argument 'pad' failed to unpack the object at pos {i + 1} "
                            "with error \"Overflow when unpacking long long\"")
        if w == -(1 << 63):  # PyTorch's symbolic-int sentinel
            raise RuntimeError("SymIntArrayRef expected to contain only concrete integers")


def _representable(out):
    """NumPy holds no dim of more than 2**63 bytes, even in an empty array (PyTorch does)."""
    if max(out, default=0) > (1 << 59):
        raise RuntimeError(f"numgrad cannot hold a tensor of shape {out}: a dimension over "
                           "2**59 elements (an empty one included) is beyond NumPy's limit")
    return out


def _dims(shape, widths):
    """(dim, size, lo, hi) of each padded dim, outermost first."""
    nd, k = len(shape), len(widths) // 2
    return [(d, shape[d], widths[2 * (nd - 1 - d)], widths[2 * (nd - 1 - d) + 1])
            for d in range(nd - k, nd)]


def constant_shape(shape, widths):
    """The output shape of constant padding: negative widths narrow first (outer dims first)."""
    dims = _dims(shape, widths)
    for _, size, lo, hi in dims:
        for w in (lo, hi):
            if w < 0:
                size += w
                if size < 0:
                    raise RuntimeError("narrow(): length must be non-negative.")
    out = list(shape)
    if all(lo <= 0 and hi <= 0 for _, _, lo, hi in dims):
        for d, size, lo, hi in dims:
            out[d] = size + lo + hi
        return out
    for d, size, lo, hi in dims:
        out[d] = _i64(size + lo + hi)
        if out[d] < 0:
            raise RuntimeError(f"The input size {size}, plus negative padding {lo} and {hi} "
                               f"resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
    return _representable(out)


def _circular_shape(shape, widths):
    out = list(shape)
    for d, size, lo, hi in _dims(shape, widths):
        out[d] = _i64(size + lo + hi)
        if lo > size or hi > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out[d] < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    return _representable(out)


def _too_small(mode, k, sizes, outs):
    if k == 1:
        return f"input (W: {sizes[0]}) is too small. Calculated output W: {outs[0]}"
    if k == 2:
        gap = " " if mode == "replicate" else ""
        return (f"input (H: {sizes[0]}, W: {sizes[1]}{gap}) is too small. Calculated output H: "
                f"{outs[0]} W: {outs[1]}")
    return (f"input (D: {sizes[0]} H: {sizes[1]}, W: {sizes[2]}) is too small. Calculated "
            f"output D: {outs[0]} H: {outs[1]} W: {outs[2]}")


def mode_shape(mode, shape, widths):
    """The output shape of reflect/replicate/circular padding, or PyTorch's error."""
    nd, k = len(shape), len(widths) // 2
    if not (1 <= k <= 3 and nd in (k + 1, k + 2)):
        raise NotImplementedError(_UNSUPPORTED.format(n=len(widths), nd=nd))
    if mode == "circular":
        return _circular_shape(shape, widths)
    first = 1 if nd == k + 2 else 0  # a batch dim may be empty, no other
    if any(shape[d] == 0 for d in range(first, nd)):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"{list(shape)}")
    dims = _dims(shape, widths)
    if mode == "reflect":
        for j, (d, size, lo, hi) in enumerate(reversed(dims)):
            if lo >= size or hi >= size:
                raise RuntimeError(
                    f"Argument #{4 + 2 * j}: Padding size should be less than the corresponding "
                    f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                    f"{list(shape)}")
    outs = [_i64(size + lo + hi) for _, size, lo, hi in dims]
    if all(o < 1 for o in outs):
        raise RuntimeError(_too_small(mode, k, [size for _, size, _, _ in dims], outs))
    out = list(shape[:nd - k]) + outs
    neg = [o for o in out if o < 0]
    if neg:
        if mode == "reflect" and k == 2:
            raise RuntimeError("numel: integer multiplication overflow")
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg[0]}: {out}")
    return _representable(out)


def kernel_name(mode, widths):
    """PyTorch's kernel name for a reflect/replicate pad, as its dtype errors spell it."""
    return f"{_KERNEL[mode]}{len(widths) // 2}d"
