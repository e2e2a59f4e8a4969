"""Optimizer updates written once for both devices, as plain functions (no Numba import here):

* ``*_consts``: the numbers of one step, computed in float64 from the step count ``t`` as
  PyTorch computes them in Python (the CPU kernels call them, inlined; the CUDA launchers run
  them on the host);
* ``*_update``: one element's update, values in and values out (the caller stores them), with
  the operations and roundings of PyTorch's single-tensor CPU update (see
  ``numgrad.kernels.cpu.optim``). A state value a flag leaves unused (SGD's buffer without
  momentum, Adam's max without amsgrad, ...) comes back unchanged, and the caller does not
  store it: its array may be a stand-in (the parameter itself).

``numgrad.kernels.cpu.optim`` (and the SGD/Adam/RMSprop loops of ``numgrad.kernels.cpu.nn``)
compile them as inlined functions of their loops and
``numgrad.kernels.cuda.optim`` as device functions of one-thread-per-element kernels, each
binding ``ffma`` (a * b + c rounded once) and the helpers to its own compiled forms."""

import math


def ffma(a, b, c):  # bound to each device's fused multiply-add when compiled
    raise NotImplementedError


def lerp2(a, b, w, w_m1, small):
    """PyTorch's ``a.lerp_(b, w)`` for a weight ``w`` in a's dtype, ``w_m1`` = w - 1 in that
    dtype and ``small`` = |w| < 0.5: a + w (b - a), else b - (1 - w)(b - a), each as one
    fused multiply-add."""
    d = b - a
    if small:
        return ffma(w, d, a)
    return ffma(w_m1, d, b)


def maximum(a, b):
    """``torch.maximum``: NaN when either is NaN."""
    if a != a or b != b:
        return a + b
    return a if a > b else b


def moments(pi, gi, mi, vi, maximize, has_wd, decoupled, decay, wd, w1, w1_m1, small, b2, w2):
    """The start of an Adam-family update (Adam/AdamW, NAdam, RAdam) on one element's values:
    the gradient (negated to maximize), weight decay (decoupled: p *= 1 - lr wd; else
    g += wd p), then m.lerp_(g, 1 - beta1) and v = beta2 v + (1 - beta2) g^2; returns
    (p, g, m, v) for the caller to store. Values in and out: a helper that indexed and stored
    into the arrays itself kept LLVM from vectorizing the callers' loops (about 40x slower)."""
    if maximize:
        gi = -gi
    if has_wd:
        if decoupled:
            pi = pi * decay
        else:
            gi = ffma(pi, wd, gi)  # grad.add(param, alpha=weight_decay)
    mi = lerp2(mi, gi, w1, w1_m1, small)
    vi = ffma(w2 * gi, gi, vi * b2)
    return pi, gi, mi, vi


def root(x, t):
    """``x ** 0.5`` as Python computes it: the C library's pow, which differs from a correctly
    rounded sqrt in about one value in 1,500. LLVM rewrites pow with a constant exponent 0.5
    into sqrt, so the exponent is computed from the step count ``t`` (0.5 for any finite t)."""
    return x ** (0.0 * t + 0.5)


def sgd_update(pi, gi, bi, lr, wd, mom, damp, has_wd, has_mom, nesterov, maximize, first):
    """d = g (negated to maximize) + wd p; with momentum b = d at the first step, else
    mom b + (1 - dampening) d, and d = d + mom b (Nesterov) or b; p -= lr d; returns (p, b)
    (b unchanged without momentum)."""
    d = -gi if maximize else gi
    if has_wd:
        d = d + wd * pi
    if has_mom:
        bi = d if first else mom * bi + damp * d
        d = d + mom * bi if nesterov else bi
    return pi - lr * d, bi


def adam_consts(t, lr, beta1, beta2):
    """-lr / (1 - beta1^t) and (1 - beta2^t)^0.5 at step ``t``."""
    return -(lr / (1.0 - beta1 ** t)), root(1.0 - beta2 ** t, t)


def adam_update(pi, gi, mi, vi, xi, amsgrad, neg_step_size, bc2, eps, maximize, has_wd,
                decoupled, decay, wd, w1, w1_m1, small, b2, w2):
    """m, v as ``moments``; amsgrad: vmax = max(vmax, v) (NaN-propagating) is v's stand-in;
    p.addcdiv_(m, sqrt(v) / bias2^0.5 + eps, value=-step_size); returns (p, m, v, vmax)
    (vmax = ``xi`` unchanged without amsgrad)."""
    pi, _, mi, vi = moments(pi, gi, mi, vi, maximize, has_wd, decoupled, decay, wd, w1, w1_m1,
                            small, b2, w2)
    d = vi
    if amsgrad:
        xi = maximum(xi, vi)
        d = xi
    denom = math.sqrt(d) / bc2 + eps
    return pi + (neg_step_size * mi) / denom, mi, vi, xi


def rmsprop_update(pi, gi, si, bi, ai, a, w, w_m1, small, wd, mom, neg_lr, eps, has_wd, has_mom,
                   centered, maximize):
    """sq.mul_(alpha).addcmul_(g, g, value=1 - alpha); centered: gavg.lerp_(g, 1 - alpha),
    avg = sqrt(sq.addcmul(gavg, gavg, value=-1)), else sqrt(sq); avg += eps; momentum:
    buf.mul_(momentum).addcdiv_(g, avg), p.add_(buf, alpha=-lr); else p.addcdiv_(g, avg,
    value=-lr); returns (p, sq, buf, gavg) (buf, gavg unchanged where not used)."""
    if maximize:
        gi = -gi
    if has_wd:
        gi = ffma(pi, wd, gi)  # grad.add(param, alpha=weight_decay)
    si = ffma(w * gi, gi, si * a)
    if centered:
        ai = lerp2(ai, gi, w, w_m1, small)
        avg = math.sqrt(ffma(-ai, ai, si)) + eps
    else:
        avg = math.sqrt(si) + eps
    if has_mom:
        bi = bi * mom + gi / avg
        return ffma(bi, neg_lr, pi), si, bi, ai
    return pi + (neg_lr * gi) / avg, si, bi, ai


def adagrad_consts(t, lr, lr_decay):
    """-clr, clr = lr / (1 + (t - 1) lr_decay) at step ``t``."""
    return -(lr / (1.0 + (t - 1.0) * lr_decay))


def adagrad_update(pi, gi, si, c, wd, eps, has_wd, maximize):
    """sum += g^2; p += c g / (sqrt(sum) + eps), g with weight decay (L2) folded in; returns
    (p, sum)."""
    if maximize:
        gi = -gi
    if has_wd:
        gi = ffma(pi, wd, gi)  # grad.add(param, alpha=weight_decay)
    si = ffma(gi, gi, si)  # state_sum.addcmul_(grad, grad, value=1)
    return pi + (c * gi) / (math.sqrt(si) + eps), si  # param.addcdiv_(grad, std, value=c)


def adamax_consts(t, lr, beta1):
    """-lr / (1 - beta1^t) at step ``t``."""
    return -(lr / (1.0 - beta1 ** t))


def adamax_update(pi, gi, mi, ui, c, w1, w1_m1, small, b2, wd, eps, has_wd, maximize):
    """m.lerp_(g, 1 - beta1); u = max(u beta2, |g| + eps) (NaN-propagating);
    p.addcdiv_(m, u, value=c), g with weight decay (L2) folded in; returns (p, m, u)."""
    if maximize:
        gi = -gi
    if has_wd:
        gi = ffma(pi, wd, gi)  # grad.add(param, alpha=weight_decay)
    mi = lerp2(mi, gi, w1, w1_m1, small)
    ui = maximum(ui * b2, abs(gi) + eps)
    return pi + (c * mi) / ui, mi, ui


def nadam_consts(t, beta1, beta2, momentum_decay):
    """(1 - beta2^t, mu_t, mu_{t+1}) with mu_t = beta1 (1 - 0.96^(t psi) / 2)."""
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (t * momentum_decay)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1.0) * momentum_decay)))
    return 1.0 - beta2 ** t, mu, mu_next


def nadam_coefs(lr, mu, mu_next, prod):
    """c1 = -lr (1 - mu_t) / (1 - mu_product), c2 = -lr mu_{t+1} / (1 - mu_product mu_{t+1})."""
    return -lr * (1.0 - mu) / (1.0 - prod), (-lr * mu_next) / (1.0 - prod * mu_next)


def nadam_update(pi, gi, mi, vi, c1, c2, bc2, eps, maximize, has_wd, decoupled, decay, wd, w1,
                 w1_m1, small, b2, w2):
    """m, v as Adam's; denom = sqrt(v / bc2) + eps; p += c1 g / denom + c2 m / denom; returns
    (p, m, v)."""
    pi, gi, mi, vi = moments(pi, gi, mi, vi, maximize, has_wd, decoupled, decay, wd, w1, w1_m1,
                             small, b2, w2)
    denom = math.sqrt(vi / bc2) + eps
    pi = pi + (c1 * gi) / denom
    return pi + (c2 * mi) / denom, mi, vi


def radam_consts(t, beta1, beta2):
    """(1 - beta1^t, whether rho_t > 5, the rectification term r_t, sqrt(1 - beta2^t)) with
    rho_inf = 2 / (1 - beta2) - 1 and rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)."""
    bias2 = 1.0 - beta2 ** t
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * t * (beta2 ** t) / bias2
    rectify = rho_t > 5.0
    rect = 0.0
    if rectify:
        rect = root((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                     / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t), t)
    return 1.0 - beta1 ** t, rectify, rect, root(bias2, t)


def radam_update(pi, gi, mi, vi, bc1, lr, one, num, rect, rectify, eps, maximize, has_wd,
                 decoupled, decay, wd, w1, w1_m1, small, b2, w2):
    """m, v as Adam's; p -= (m / bc1) lr (sqrt(bias2) / (sqrt(v) + eps)) r_t when rectified,
    else p -= (m / bc1) lr; returns (p, m, v)."""
    pi, _, mi, vi = moments(pi, gi, mi, vi, maximize, has_wd, decoupled, decay, wd, w1, w1_m1,
                            small, b2, w2)
    x = (mi / bc1) * lr
    if rectify:
        x = (x * ((one / (math.sqrt(vi) + eps)) * num)) * rect  # float / t: reciprocal
    return pi - x, mi, vi


def adadelta_update(pi, gi, si, ai, r, w, wd, eps, neg_lr, has_wd, maximize):
    """sq.mul_(rho).addcmul_(g, g, value=1 - rho); d = sqrt(acc + eps) / sqrt(sq + eps) g;
    acc.mul_(rho).addcmul_(d, d, value=1 - rho); p.add_(d, alpha=-lr); returns (p, sq, acc)."""
    if maximize:
        gi = -gi
    if has_wd:
        gi = ffma(pi, wd, gi)
    si = ffma(w * gi, gi, si * r)
    d = (math.sqrt(ai + eps) / math.sqrt(si + eps)) * gi
    return ffma(d, neg_lr, pi), si, ffma(w * d, d, ai * r)
