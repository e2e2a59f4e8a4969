"""``numgrad.optim``: SGD, Adam, AdamW, RMSprop, Adagrad and learning-rate schedulers."""

from numgrad.optim import lr_scheduler  # noqa: F401
from numgrad.optim.algorithms import SGD, Adagrad, Adam, AdamW, RMSprop
from numgrad.optim.optimizer import Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
