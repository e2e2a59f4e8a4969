"""``numgrad.optim``: SGD, Adam, AdamW, RMSprop and learning-rate schedulers."""

from numgrad.optim import lr_scheduler  # noqa: F401
from numgrad.optim.algorithms import SGD, Adam, AdamW, RMSprop
from numgrad.optim.optimizer import Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler"]
