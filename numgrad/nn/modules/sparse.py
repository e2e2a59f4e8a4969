"""``torch.nn.modules.sparse``'s import path: numgrad's classes of its names."""

from numgrad.nn.modules._alias import exports

_NAMES = (
    "Embedding", "EmbeddingBag",
)
__getattr__, __dir__ = exports(__name__, _NAMES)
