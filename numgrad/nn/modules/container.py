"""``torch.nn.modules.container``'s import path: numgrad's classes of its names."""

from numgrad.nn.modules._alias import exports

_NAMES = (
    "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
)
__getattr__, __dir__ = exports(__name__, _NAMES)
