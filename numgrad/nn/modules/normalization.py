"""``torch.nn.modules.normalization``'s import path: numgrad's classes of its names."""

from numgrad.nn.modules._alias import exports

_NAMES = (
    "LocalResponseNorm", "CrossMapLRN2d", "LayerNorm", "GroupNorm", "RMSNorm",
)
__getattr__, __dir__ = exports(__name__, _NAMES)
