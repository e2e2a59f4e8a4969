"""Fused optimizer updates beyond SGD/Adam/RMSprop (those live in ``nn``), and the scalar
steps the update kernels share: one pass over a flat, contiguous parameter and its state, in
the parameter's dtype, with the operations of PyTorch's single-tensor implementation in its
order and with its roundings, so results are PyTorch's CPU results bit for bit:

* a tensor op with a Python number converts the number to the parameter dtype first;
* where PyTorch's vectorized CPU kernels compute a fused multiply-add (``add(.., alpha=)``,
  ``addcmul``, ``lerp``), the update does too (``ffma``: one rounding);
* ``addcdiv(x, a, b, value=c)`` is ``x + (c a) / b``;
* numbers PyTorch computes in Python (bias corrections, the decayed learning rate) are
  computed in float64 from the step count, which each kernel takes as a one-element array
  and increments itself, in its dtype (so a compiled step that replays the kernel counts on).

Callers never pass empty arrays.
"""

import math

from numgrad.kernels._jit import inline, jit
from numgrad.kernels.cpu._fastmath import ffma
from numgrad.kernels.cpu._scalar import like


@inline
def lerp_(a, b, w):
    """PyTorch's ``a.lerp_(b, w)`` for a weight ``w`` in a's dtype: a + w (b - a) when
    |w| < 0.5, else b - (1 - w)(b - a), each as one fused multiply-add."""
    d = b - a
    if abs(w) < 0.5:
        return ffma(w, d, a)
    return ffma(w - like(w, 1.0), d, b)


@inline
def maximum_(a, b):
    """``torch.maximum``: NaN when either is NaN."""
    if a != a or b != b:
        return a + b
    return a if a > b else b


@inline
def root_(x, t):
    """``x ** 0.5`` as Python computes it: the C library's pow, which differs from a correctly
    rounded sqrt in about one value in 1,500. LLVM rewrites pow with a constant exponent 0.5
    into sqrt, so the exponent is computed from the step count ``t`` (0.5 for any finite t)."""
    return x ** (0.0 * t + 0.5)


@jit
def adagrad_step(p, g, state_sum, step, lr, lr_decay, weight_decay, eps, maximize):
    """sum += g^2; p += -clr g / (sqrt(sum) + eps), g with weight decay (L2) folded in, where
    clr = lr / (1 + (step - 1) lr_decay) for the incremented ``step``."""
    step[0] += 1
    clr = lr / (1.0 + (float(step[0]) - 1.0) * lr_decay)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    c = like(p[0], -clr)
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if weight_decay != 0:
            gi = ffma(p[i], wd, gi)  # grad.add(param, alpha=weight_decay)
        s = ffma(gi, gi, state_sum[i])  # state_sum.addcmul_(grad, grad, value=1)
        state_sum[i] = s
        p[i] = p[i] + (c * gi) / (math.sqrt(s) + eps_)  # param.addcdiv_(grad, std, value=-clr)
