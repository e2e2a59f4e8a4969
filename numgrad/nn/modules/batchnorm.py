"""``torch.nn.modules.batchnorm``'s import path: numgrad's classes of its names."""

from numgrad.nn.modules._alias import exports

_NAMES = (
    "BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d",
    "LazyBatchNorm3d", "SyncBatchNorm",
)
__getattr__, __dir__ = exports(__name__, _NAMES)
