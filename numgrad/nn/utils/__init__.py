"""``numgrad.nn.utils``: gradient clipping."""

from numgrad.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from numgrad.nn.utils import stateless  # noqa: E402,F401  (nn.utils.stateless)

__all__ = ["clip_grad_norm_", "clip_grad_value_"]
