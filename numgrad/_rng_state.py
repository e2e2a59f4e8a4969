"""A CPU generator's state as bytes, in PyTorch's layout (5056 bytes), so a state from
``numgrad.get_rng_state`` loads in ``torch.set_rng_state`` and the other way round.

Layout (little-endian, C struct padding): the initial seed (uint64) at 0, ``left`` (int32) at
8, ``seeded`` (int32) at 12, ``next`` (uint64) at 16, the 624 MT19937 words (each a uint64)
at 24; the cached second normal of a pair (float64 ``normal_y``) at 5024 with its flag
(int32) at 5040, and the cached float normal (float32) at 5048 with its flag (a byte) at
5052. The other bytes are PyTorch's unused fields and padding, written as zeros.

``unpack`` checks everything before a kernel reads the state: a uint8 CPU tensor, contiguous,
5056 bytes, and a valid engine (seeded, ``0 < left <= 624``, ``next <= 624``, and
``next + left <= 625``, so that no draw before the next twist reads past the words).
"""

import numpy as np

SIZE = 5056
_N = 624
_WORDS = slice(24, 24 + 8 * _N)
_NORMAL_Y, _NORMAL_VALID, _FLOAT, _FLOAT_VALID = 5024, 5040, 5048, 5052


def _type_name(v):
    """How PyTorch's C++ bindings name a Python object's type (``numpy.ndarray``)."""
    from numgrad.tensor import Tensor
    if isinstance(v, Tensor):
        return "Tensor"
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def pack(words, seed, normal, float_normal):
    """The 5056 state bytes of engine ``words`` (uint32[626]: words, next, left), initial
    ``seed`` and the cached normals (None when there is none)."""
    out = np.zeros(SIZE, np.uint8)
    out[0:8].view(np.uint64)[0] = seed
    out[8:12].view(np.int32)[0] = words[_N + 1]
    out[12:16].view(np.int32)[0] = 1
    out[16:24].view(np.uint64)[0] = words[_N]
    out[_WORDS].view(np.uint64)[:] = words[:_N]
    if normal is not None:
        out[_NORMAL_Y:_NORMAL_Y + 8].view(np.float64)[0] = normal
        out[_NORMAL_VALID:_NORMAL_VALID + 4].view(np.int32)[0] = 1
    if float_normal is not None:
        out[_FLOAT:_FLOAT + 4].view(np.float32)[0] = float_normal
        out[_FLOAT_VALID] = 1
    return out


def unpack(state):
    """``(words, seed, normal, float_normal)`` from a state tensor, after PyTorch's checks
    (its exception classes and messages) and the bounds the draw kernel relies on."""
    from numgrad.tensor import Tensor
    if not isinstance(state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {_type_name(state)}")
    data = state._data
    if data.__class__ is not np.ndarray or data.dtype != np.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    if not data.flags.c_contiguous:
        raise RuntimeError("RNG state must be contiguous")
    if data.size != SIZE:
        raise RuntimeError(f"Expected a CPUGeneratorImplState of size {SIZE} but found the "
                           f"input RNG state size to be {data.size}")
    raw = np.ascontiguousarray(data).reshape(-1).copy()  # later writes to the tensor: no effect
    left = int(raw[8:12].view(np.int32)[0])
    seeded = int(raw[12:16].view(np.int32)[0])
    nxt = int(raw[16:24].view(np.uint64)[0]) & 0xFFFFFFFF  # PyTorch keeps the low 32 bits
    # PyTorch's engine check, and next + left <= 625: PyTorch's own draws would read past
    # its words for such a state (left - 1 draws from next before the twist)
    if not (seeded and 0 < left <= _N and nxt <= _N and nxt + left <= _N + 1):
        raise RuntimeError("Invalid mt19937 state")
    words = np.empty(_N + 2, np.uint32)
    words[:_N] = raw[_WORDS].view(np.uint64) & np.uint64(0xFFFFFFFF)
    words[_N] = nxt
    words[_N + 1] = left
    seed = int(raw[0:8].view(np.uint64)[0])
    normal = None
    if raw[_NORMAL_VALID:_NORMAL_VALID + 4].view(np.int32)[0]:
        normal = float(raw[_NORMAL_Y:_NORMAL_Y + 8].view(np.float64)[0])
    float_normal = None
    if raw[_FLOAT_VALID]:
        float_normal = raw[_FLOAT:_FLOAT + 4].view(np.float32)[0]
    return words, seed, normal, float_normal
