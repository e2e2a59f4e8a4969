"""``torch.nn.modules.dropout``'s import path: numgrad's classes of its names."""

from numgrad.nn.modules._alias import exports

_NAMES = (
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
)
__getattr__, __dir__ = exports(__name__, _NAMES)
