"""``numgrad.optim``: SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, LBFGS and
learning-rate schedulers."""

from numgrad.optim import lr_scheduler  # noqa: F401
from numgrad.optim.adaptive import Adadelta, Adamax, NAdam, RAdam
from numgrad.optim.algorithms import SGD, Adagrad, Adam, AdamW, RMSprop
from numgrad.optim.lbfgs import LBFGS
from numgrad.optim.optimizer import Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam",
           "Adadelta", "LBFGS", "lr_scheduler"]
