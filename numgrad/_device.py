"""``numgrad.device``: where a tensor lives, the CPU or the (single) CUDA GPU.

A tensor's device is the class of its data: a NumPy array on the CPU, a ``CudaArray``
(``numgrad.kernels.cuda``) on the GPU. The CUDA backend, and Numba's CUDA driver, load the
first time a CUDA device is asked for.
"""

import numpy as np


class device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        kind = type
        if isinstance(kind, device):
            kind, index = kind.type, kind.index
        if not isinstance(kind, str):
            raise TypeError(
                f"device() received an invalid combination of arguments - got ({kind!r})")
        if ":" in kind:
            kind, _, idx = kind.partition(":")
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was "
                                   "passed explicitly")
            index = int(idx)
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {kind}")
        self.type = kind
        self.index = index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))


CPU = device("cpu")
CUDA0 = device("cuda", 0)
_AVAILABLE = []


def cuda_available():
    if not _AVAILABLE:
        try:
            from numgrad.kernels.cuda._launch import is_available
            ok = is_available()
        except ImportError:  # a Numba without its CUDA target
            ok = False
        _AVAILABLE.append(ok)
    return _AVAILABLE[0]


def get(spec):
    """Normalize a device argument (None means the CPU) to ``CPU`` or ``CUDA0``."""
    if spec is None or spec is CPU:
        return CPU
    if spec is CUDA0:
        return CUDA0
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = device("cuda", spec)
    d = spec if isinstance(spec, device) else device(spec)
    if d.type == "cpu":
        return CPU
    if not cuda_available():
        raise AssertionError("Torch not compiled with CUDA enabled")
    if d.index not in (None, 0):
        raise RuntimeError("CUDA error: invalid device ordinal")
    return CUDA0


def of(arr):
    """The device of a tensor's data array."""
    return CPU if arr.__class__ is np.ndarray else CUDA0
