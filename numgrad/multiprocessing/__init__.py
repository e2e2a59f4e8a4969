"""``numgrad.multiprocessing``: the standard ``multiprocessing`` names, as PyTorch re-exports
them, and ``spawn``/``start_processes`` (``fn(i, *args)`` in ``nprocs`` processes; an exception
in a child is raised in the parent as ``ProcessRaisedException`` with the child's traceback).
numgrad tensors pickle by value, so no shared-memory reducers are registered."""

import multiprocessing
import sys
from multiprocessing import *  # noqa: F403  (PyTorch re-exports the whole module)

from numgrad.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"]
__all__ += multiprocessing.__all__

if sys.platform in ("darwin", "win32"):
    _all_sharing_strategies = {"file_system"}
else:
    _all_sharing_strategies = {"file_descriptor", "file_system"}
_sharing_strategy = "file_system" if sys.platform in ("darwin", "win32") else "file_descriptor"


def set_sharing_strategy(new_strategy):
    """Record the strategy for sharing CPU tensors (numgrad sends tensors by value)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, "
                             f"expected one of {_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return _all_sharing_strategies
