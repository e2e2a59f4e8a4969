"""``numgrad.nn``: modules, layers, losses, ``functional`` and ``init``, as in torch.nn."""

from numgrad.nn import functional, init, parallel, utils  # noqa: F401
from numgrad.nn.modules import *  # noqa: F403
from numgrad.nn.modules import __all__ as _modules_all
from numgrad.nn.parallel import DataParallel
from numgrad.nn.parameter import Buffer, Parameter

__all__ = ["functional", "init", "parallel", "utils", "Parameter", "Buffer", "DataParallel",
           *_modules_all]
