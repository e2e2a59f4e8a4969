"""``numgrad.device``: where a tensor lives. The CPU is the only device in this build."""


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


def get(spec):
    """Normalize a device argument; only the CPU is available."""
    if spec is None or spec is CPU:
        return CPU
    d = spec if isinstance(spec, device) else device(spec)
    if d.type == "cpu":
        return CPU
    raise AssertionError("Torch not compiled with CUDA enabled")
