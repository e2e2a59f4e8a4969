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
def adam_moments(pi, gi, mi, vi, maximize, weight_decay, decoupled, decay, wd, w1, b2, w2):
    """The start of an Adam-family update (Adam/AdamW, NAdam, RAdam) on one element's values:
    the gradient (negated to maximize), weight decay (decoupled: p *= 1 - lr wd; else
    g += wd p), then m.lerp_(g, 1 - beta1) and v = beta2 v + (1 - beta2) g^2; returns
    (p, g, m, v) for the caller to store. Values in and out: a helper that indexed and stored
    into the arrays itself kept LLVM from vectorizing the callers' loops (about 40x slower)."""
    if maximize:
        gi = -gi
    if weight_decay != 0:
        if decoupled:
            pi = pi * decay
        else:
            gi = ffma(pi, wd, gi)  # grad.add(param, alpha=weight_decay)
    mi = lerp_(mi, gi, w1)
    vi = ffma(w2 * gi, gi, vi * b2)
    return pi, gi, mi, vi


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


@jit
def adamax_step(p, g, m, u, step, lr, beta1, beta2, eps, weight_decay, maximize):
    """Adamax: m.lerp_(g, 1 - beta1); u = max(u beta2, |g| + eps) (NaN-propagating);
    p.addcdiv_(m, u, value=-lr / (1 - beta1^t)), g with weight decay (L2) folded in."""
    step[0] += 1
    t = float(step[0])
    c = like(p[0], -(lr / (1.0 - beta1 ** t)))
    w1 = like(p[0], 1.0 - beta1)
    b2 = like(p[0], beta2)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if weight_decay != 0:
            gi = ffma(p[i], wd, gi)  # grad.add(param, alpha=weight_decay)
        mi = lerp_(m[i], gi, w1)
        m[i] = mi
        ui = maximum_(u[i] * b2, abs(gi) + eps_)
        u[i] = ui
        p[i] = p[i] + (c * mi) / ui


@jit
def nadam_step(p, g, m, v, step, mu_product, lr, beta1, beta2, eps, weight_decay,
               momentum_decay, decoupled, maximize):
    """NAdam: mu_t = beta1 (1 - 0.96^(t psi) / 2); mu_product *= mu_t (in its dtype); m, v as
    Adam's; denom = sqrt(v / (1 - beta2^t)) + eps; p += c1 g / denom + c2 m / denom with
    c1 = -lr (1 - mu_t) / (1 - mu_product), c2 = -lr mu_{t+1} / (1 - mu_product mu_{t+1})."""
    step[0] += 1
    t = float(step[0])
    bias2 = 1.0 - beta2 ** t
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (t * momentum_decay)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1.0) * momentum_decay)))
    mu_product[0] = mu_product[0] * like(mu_product[0], mu)
    prod = float(mu_product[0])
    c1 = like(p[0], -lr * (1.0 - mu) / (1.0 - prod))
    c2 = like(p[0], (-lr * mu_next) / (1.0 - prod * mu_next))
    bc2 = like(p[0], bias2)
    w1 = like(p[0], 1.0 - beta1)
    b2 = like(p[0], beta2)
    w2 = like(p[0], 1.0 - beta2)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    decay = like(p[0], 1.0 - lr * weight_decay)
    for i in range(p.size):
        pi, gi, mi, vi = adam_moments(p[i], g[i], m[i], v[i], maximize, weight_decay,
                                      decoupled, decay, wd, w1, b2, w2)
        m[i] = mi
        v[i] = vi
        denom = math.sqrt(vi / bc2) + eps_
        pi = pi + (c1 * gi) / denom
        p[i] = pi + (c2 * mi) / denom


@jit
def radam_step(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    """RAdam: m, v as Adam's; with rho_inf = 2 / (1 - beta2) - 1 and
    rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t): p -= (m / bias1) lr (sqrt(bias2) / (sqrt(v)
    + eps)) r_t when rho_t > 5 (r_t the rectification term), else p -= (m / bias1) lr."""
    step[0] += 1
    t = float(step[0])
    bias1 = 1.0 - beta1 ** t
    bias2 = 1.0 - beta2 ** t
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * t * (beta2 ** t) / bias2
    rectify = rho_t > 5.0
    rect = 0.0
    if rectify:
        rect = root_((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                     / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t), t)
    rect_ = like(p[0], rect)
    num = like(p[0], root_(bias2, t))
    bc1 = like(p[0], bias1)
    lr_ = like(p[0], lr)
    one = like(p[0], 1.0)
    w1 = like(p[0], 1.0 - beta1)
    b2 = like(p[0], beta2)
    w2 = like(p[0], 1.0 - beta2)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    decay = like(p[0], 1.0 - lr * weight_decay)
    for i in range(p.size):
        pi, _, mi, vi = adam_moments(p[i], g[i], m[i], v[i], maximize, weight_decay, decoupled,
                                     decay, wd, w1, b2, w2)
        m[i] = mi
        v[i] = vi
        x = (mi / bc1) * lr_
        if rectify:
            x = (x * ((one / (math.sqrt(vi) + eps_)) * num)) * rect_  # float / t: reciprocal
        p[i] = pi - x


@jit
def adadelta_step(p, g, sq, acc, step, lr, rho, eps, weight_decay, maximize):
    """Adadelta: sq.mul_(rho).addcmul_(g, g, value=1 - rho); d = sqrt(acc + eps) /
    sqrt(sq + eps) g; acc.mul_(rho).addcmul_(d, d, value=1 - rho); p.add_(d, alpha=-lr)."""
    step[0] += 1
    r = like(p[0], rho)
    w = like(p[0], 1.0 - rho)
    wd = like(p[0], weight_decay)
    eps_ = like(p[0], eps)
    neg_lr = like(p[0], -lr)
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        if weight_decay != 0:
            gi = ffma(p[i], wd, gi)
        s = ffma(w * gi, gi, sq[i] * r)
        sq[i] = s
        d = (math.sqrt(acc[i] + eps_) / math.sqrt(s + eps_)) * gi
        acc[i] = ffma(w * d, d, acc[i] * r)
        p[i] = ffma(d, neg_lr, p[i])


@jit
def clip_coef(total, max_norm, out):
    """out[0] = clamp(max_norm / (total + 1e-6), max=1) in total's dtype, with the roundings
    of PyTorch's tensor ops: (total + 1e-6), its reciprocal, times max_norm, then min(., 1)
    (NaN passes through the clamp)."""
    t = total[0] + like(total[0], 1e-6)
    c = (like(t, 1.0) / t) * like(t, max_norm)
    out[0] = c if c != c or c < like(c, 1.0) else like(c, 1.0)


@jit
def scale_(g, c):
    """g *= c[0] (a gradient by the clipping coefficient, in g's dtype)."""
    s = c[0]
    for i in range(g.size):
        g[i] = g[i] * s
