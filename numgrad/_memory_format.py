"""``torch.memory_format``: ``contiguous_format``, ``preserve_format``, ``channels_last`` and
``channels_last_3d``, and what ``clone``, ``contiguous``, ``*_like`` and ``is_contiguous`` do
with them on dense tensors: a channels-last result is an array whose memory runs N, (D,) H, W,
C, seen through the NC(D)HW axis order (so ``stride()`` reads as PyTorch's). Numgrad's default
layout (``preserve_format`` included) stays C order."""


class memory_format:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name  # pickles as this module's attribute of that name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

_PHYSICAL = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


def check(fmt, fn, allow_none=True):
    """PyTorch's TypeError for a ``memory_format=`` argument that is not one."""
    if fmt is None and allow_none:
        return
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")


def order(fmt, shape, fn, allow_none=True):
    """The order in memory of a result's axes for ``fmt`` (None: C order), after PyTorch's
    checks of the argument and of the tensor's rank."""
    check(fmt, fn, allow_none)
    phys = _PHYSICAL.get(fmt)
    if phys is not None and len(shape) != len(phys):
        raise RuntimeError(f"required rank {len(phys)} tensor to use {fmt._name} format")
    return phys


def inverse(phys):
    inv = [0] * len(phys)
    for i, a in enumerate(phys):
        inv[a] = i
    return tuple(inv)


def is_contiguous(a, fmt):
    """Whether array ``a`` is contiguous in ``fmt`` (axes of size 1 are not looked at)."""
    phys = _PHYSICAL.get(fmt)
    if phys is None:
        return a.flags.c_contiguous
    if a.ndim != len(phys):
        return False
    expected = 1
    for ax in reversed(phys):
        n = a.shape[ax]
        if n != 1:
            if a.strides[ax] != expected * a.itemsize:
                return False
            expected *= n
    return True


def preserved(a):
    """The channels-last memory order ``preserve_format`` keeps for array ``a``, or None."""
    if a.flags.c_contiguous or a.ndim not in (4, 5) or a.__class__.__name__ != "ndarray":
        return None
    fmt = channels_last if a.ndim == 4 else channels_last_3d
    return _PHYSICAL[fmt] if is_contiguous(a, fmt) else None


def uniform_in(t, phys):
    """Tensor ``t`` of equal (or unset) elements, re-laid out in memory order ``phys``."""
    a = t._data
    if phys is not None and hasattr(a, "transpose") and hasattr(a, "reshape"):
        t._data = a.reshape(tuple(a.shape[i] for i in phys)).transpose(inverse(phys))
    return t
