"""Fused optimizer updates beyond SGD/Adam/RMSprop (those live in ``nn``): one pass over a
flat, contiguous parameter and its state, in the parameter's dtype, with the operations in
the order of PyTorch's single-tensor implementation so float32 results round the same way.

Each kernel takes Python floats for the hyper-parameters and converts them to the parameter
dtype first, as PyTorch's scalar arguments are, and the parameter's step count as a
one-element array that it increments itself (so a compiled step that replays the kernel
counts on). Callers never pass empty arrays.
"""

import math

from numgrad.kernels._jit import jit
from numgrad.kernels.cpu._scalar import like


@jit
def adagrad_step(p, g, state_sum, step, lr, lr_decay, weight_decay, eps, maximize):
    """sum += g^2; p += -clr * g / (sqrt(sum) + eps), g with weight decay (L2) folded in.
    ``step`` (one element: the parameter's step tensor) is incremented here, in its dtype, and
    clr = lr / (1 + (step - 1) lr_decay) computed from the new count in float64, as PyTorch
    does in Python."""
    step[0] += 1
    clr = lr / (1.0 + (float(step[0]) - 1.0) * lr_decay)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    c = like(p[0], -clr)
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if weight_decay != 0:
            gi = gi + wd * p[i]
        s = state_sum[i] + gi * gi
        state_sum[i] = s
        p[i] = p[i] + (c * gi) / (math.sqrt(s) + eps_)
