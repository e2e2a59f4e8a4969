"""Fused optimizer updates beyond SGD/Adam/RMSprop (those live in ``nn``): one pass over a
flat, contiguous parameter and its state, in the parameter's dtype, with the operations in
the order of PyTorch's single-tensor implementation so float32 results round the same way.

Each kernel takes Python floats for the hyper-parameters and converts them to the parameter
dtype first, as PyTorch's scalar arguments are. Callers never pass empty arrays.
"""

import math

from numgrad.kernels._jit import jit
from numgrad.kernels.cpu._scalar import like


@jit
def adagrad_step(p, g, state_sum, neg_clr, weight_decay, eps, maximize):
    """sum += g^2; p += -clr * g / (sqrt(sum) + eps), g with weight decay (L2) folded in."""
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    c = like(p[0], neg_clr)
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if weight_decay != 0:
            gi = gi + wd * p[i]
        s = state_sum[i] + gi * gi
        state_sum[i] = s
        p[i] = p[i] + (c * gi) / (math.sqrt(s) + eps_)
