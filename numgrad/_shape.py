"""Pure-Python shape rules: broadcasting, dimension wrapping, reduce-to-shape axes."""

import operator


class Size(tuple):
    """``torch.Size``: a tuple of ints that prints as ``torch.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self):
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))


def broadcast_shapes(a, b):
    """The broadcast of two shapes, with PyTorch's error for incompatible sizes."""
    if a == b:
        return a
    na, nb = len(a), len(b)
    n = max(na, nb)
    out = [0] * n
    for i in range(-1, -n - 1, -1):  # from the last dim, as PyTorch reports the first mismatch
        sa = a[i] if -i <= na else 1
        sb = b[i] if -i <= nb else 1
        if sa == sb or sb == 1:
            out[i] = sa
        elif sa == 1:
            out[i] = sb
        else:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) "
                f"at non-singleton dimension {n + i}")
    return tuple(out)


def wrap_dim(dim, ndim):
    """Wrap a possibly negative dim into [0, ndim); 0-d tensors accept -1 and 0."""
    try:
        dim = operator.index(dim)
    except TypeError:
        raise TypeError(f"dim must be an int, got {type(dim).__name__}") from None
    n = ndim if ndim > 0 else 1
    if dim < -n or dim >= n:
        raise dim_error(dim, ndim)
    return dim + n if dim < 0 else dim


def dim_error(dim, ndim):
    """PyTorch's IndexError for ``dim`` outside a tensor of ``ndim`` dims (0-d counts as 1)."""
    n = max(ndim, 1)
    return IndexError(
        f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")


def wrap_dims(dims, ndim):
    """Normalize ``dim`` arguments (int, tuple, list or None=all) to a sorted tuple."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, (tuple, list)):
        out = []
        for d in dims:
            w = wrap_dim(d, ndim)
            if w in out:
                raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
            out.append(w)
        if ndim == 0:
            return ()
        return tuple(sorted(out))
    w = wrap_dim(dims, ndim)
    return () if ndim == 0 else (w,)


def reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def sum_to_axes(shape, target):
    """Axes of ``shape`` to sum (keeping dims) so that the result reshapes to ``target``.

    Returns (leading, kept): the number of leading dims that ``target`` lacks and the
    positions (in ``shape``) of the size-1 dims of ``target`` that were broadcast.
    """
    lead = len(shape) - len(target)
    kept = tuple(lead + i for i, s in enumerate(target) if s == 1 and shape[lead + i] != 1)
    return lead, kept


def infer_size(shape, numel):
    """Resolve a single -1 in a reshape target, with PyTorch's errors."""
    neg = -1
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if neg >= 0:
                raise RuntimeError("only one dimension can be inferred")
            neg = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
        else:
            known *= s
    if neg >= 0:
        if known == 0 and numel == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                "unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = list(shape)
        shape[neg] = numel // known
        return tuple(shape)
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def check_size(shape, fname=None):
    """A size for a new tensor: no negative dimension (PyTorch's messages)."""
    n = 1
    for s in shape:
        if s < 0:
            if fname == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(shape)}")
        n *= s
    if n >= 2**63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    return shape


def parse_shape(args):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(torch.Size([2, 3]))`` all mean (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    try:
        return tuple(operator.index(s) for s in args)
    except TypeError:
        bad = next(s for s in args if not hasattr(s, "__index__"))
        raise TypeError(
            f"expected a sequence of integers or a single integer, got '{bad!r}'") from None
