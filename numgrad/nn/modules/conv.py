"""``torch.nn.modules.conv``'s import path: numgrad's classes of its names."""

from numgrad.nn.modules._alias import exports

_NAMES = (
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
    "LazyConvTranspose3d",
)
__getattr__, __dir__ = exports(__name__, _NAMES)
