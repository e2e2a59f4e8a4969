"""``numgrad.nn.utils``: gradient clipping."""

from numgrad.nn.utils import rnn  # noqa: F401  (nn.utils.rnn)
from numgrad.nn.utils.clip_grad import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def __getattr__(name):
    # ``torch.nn.utils.stateless`` works right after ``import torch``; so does ours
    if name == "stateless":
        import importlib
        return importlib.import_module("numgrad.nn.utils.stateless")
    raise AttributeError(f"module 'numgrad.nn.utils' has no attribute '{name}'")
