"""Losses PyTorch computes as ops of their own (one node on the reduced result):
``huber_loss``, ``soft_margin_loss``, ``multi_margin_loss``, ``multilabel_margin_loss``.
Each forward is a composite of existing kernels run without recording; each derivative is
written with recording ops, so double backward works. Reached through ``numgrad.nn.functional``
(variant ``"functional"``), which parses the arguments; their value and dtype checks are
``numgrad.ops.nn_losses``."""

import numpy as np

from numgrad.autograd import grad_mode
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops.registry import op

_F = ("functional",)


def _reduce(loss, reduction):
    if reduction == "mean":
        return red.mean(loss)
    if reduction == "sum":
        return red.sum(loss)
    return loss


def _scale(grad, reduction, n):
    """The incoming gradient per element: g / n for 'mean', g for 'sum' and 'none'."""
    return ew.div(grad, n) if reduction == "mean" else grad


def _like(a, x):
    """A host array as a tensor of ``x``'s dtype on ``x``'s device."""
    from numgrad import tensor
    return tensor(a, dtype=x.dtype, device=x.device)


def _host_ints(t):
    return np.asarray(t.detach().cpu().numpy(), dtype=np.int64)


def _sum_to(g, shape):
    """A broadcast operand's gradient: g summed over the dims it was broadcast along."""
    return g if tuple(g.shape) == tuple(shape) else g.sum_to_size(shape)


# ---- huber_loss ----

# d/dx huber(x - t) = clamp(x - t, -delta, delta) (/ n for 'mean'); d/dt = -that
def _huber_d(grad, self, target, reduction, delta):
    d = ew.clamp(ew.sub(self, target), -delta, delta)
    return ew.mul(d, _scale(grad, reduction, d.numel()))


@op(node="HuberLossBackward0", inputs=("self", "other"), variants=_F,
    grads={"self": lambda grad, self, target, reduction, delta: _sum_to(
               _huber_d(grad, self, target, reduction, delta), self.shape),
           "other": lambda grad, self, target, reduction, delta: _sum_to(
               ew.neg(_huber_d(grad, self, target, reduction, delta)), target.shape)})
def huber_loss(input, target, reduction, delta):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); d = input - target."""
    with grad_mode.no_grad():
        d = ew.sub(input, target)
        a = un.abs(d)
        el = ew.where(ew.lt(a, delta), ew.mul(ew.mul(d, d), 0.5),
                      ew.mul(ew.sub(a, 0.5 * delta), delta))
        out = _reduce(el, reduction)
    return out._data, {"target": target, "reduction": reduction, "delta": delta}


# ---- soft_margin_loss ----

# d/dx log(1 + e^(-y x)) = -y sigmoid(-y x) (/ n for 'mean')
@op(node="SoftMarginLossBackward0", variants=_F,
    grads={"self": lambda grad, self, target, reduction: ew.mul(
        ew.neg(ew.mul(target, un.sigmoid(ew.neg(ew.mul(target, self))))),
        _scale(grad, reduction, self.numel()))})
def soft_margin_loss(input, target, reduction):
    """log(1 + e^(-y x)), as softplus(-y x)."""
    with grad_mode.no_grad():
        out = _reduce(un.softplus(ew.neg(ew.mul(target, input))), reduction)
    return out._data, {"target": target.detach(), "reduction": reduction}


# ---- multi_margin_loss ----

def _rows(x):
    return sh.reshape(x, (1, -1)) if x.dim() <= 1 else x


def _margins(self, onehot, wy, p, margin):
    """Per class: w_y max(0, margin - x_y + x_i)^p (0 at i = y), and the hinge's z."""
    x = _rows(self)
    xy = red.sum(ew.mul(x, onehot), 1, keepdim=True)
    z = ew.add(ew.sub(x, xy), margin)
    active = ew.logical_and(ew.gt(z, 0), ew.eq(onehot, 0))
    return z, active, x


# d/dx_i = w_y [z_i > 0] (1 or 2 z_i) / C for i != y, d/dx_y = -(their sum) (/ N for 'mean')
def _multi_margin_dx(grad, self, onehot, wy, p, margin, reduction):
    z, active, x = _margins(self, onehot, wy, p, margin)
    c = x.shape[1]
    dz = ew.where(active, ew.mul(z, 2.0) if p == 2 else 1.0, 0.0)
    dz = ew.mul(dz, ew.div(wy, c))
    g = grad
    if reduction == "mean":
        g = ew.div(g, x.shape[0])
    if reduction == "none":
        g = sh.reshape(g, (-1, 1))
    dz = ew.mul(dz, g)
    dx = ew.sub(dz, ew.mul(onehot, red.sum(dz, 1, keepdim=True)))
    return sh.reshape(dx, self.shape)


@op(node="MultiMarginLossBackward0", variants=_F,
    grads={"self": _multi_margin_dx},
    save=("self", "onehot", "wy", "p", "margin", "reduction"))
def multi_margin_loss(input, target, p, margin, weight, reduction):
    """sum over i != y of w_y max(0, margin - x_y + x_i)^p / C, per row."""
    x = input.detach()
    rows = 1 if x.dim() <= 1 else x.shape[0]
    c = 1 if x.dim() == 0 else x.shape[-1]
    t = _host_ints(target).reshape(-1)
    if t.size and (t.min() < 0 or t.max() >= c):
        raise RuntimeError("target out of range")
    oh = np.zeros((rows, c))
    oh[np.arange(rows), t] = 1
    onehot = _like(oh, x)
    if weight is not None:
        wy = sh.reshape(weight.detach().reshape(-1)[_like(t, target)], (-1, 1))
    else:
        wy = _like(np.ones((rows, 1)), x)
    with grad_mode.no_grad():
        z, active, xr = _margins(x, onehot, wy, p, margin)
        el = ew.where(active, ew.mul(z, z) if p == 2 else z, 0.0)
        loss = ew.div(red.sum(ew.mul(el, wy), 1), c)
        if reduction == "none":
            out = loss if input.dim() > 1 else sh.reshape(loss, ())
        else:
            out = _reduce(loss, reduction)
    return out._data, {"onehot": onehot, "wy": wy, "p": p, "margin": margin,
                       "reduction": reduction}


# ---- multilabel_margin_loss ----

def _pair_hinges(self, count, other):
    """z[n, j, i] = 1 - x_j + x_i, kept (times j's count) for targets j and non-targets i."""
    x = _rows(self)
    z = ew.add(ew.sub(sh.unsqueeze(x, 1), sh.unsqueeze(x, 2)), 1.0)
    keep = ew.mul(sh.unsqueeze(count, 2), sh.unsqueeze(other, 1))
    return z, keep, x


# d/dx_i = sum_j [z_ji > 0] / C, d/dx_j = -sum_i [z_ji > 0] / C (/ N for 'mean')
def _multilabel_dx(grad, self, count, other, reduction):
    z, keep, x = _pair_hinges(self, count, other)
    d = ew.where(ew.gt(z, 0), keep, 0.0)
    g = grad
    if reduction == "mean":
        g = ew.div(g, x.shape[0])
    if reduction == "none":
        g = sh.reshape(g, (-1, 1, 1))
    d = ew.mul(d, ew.div(g, x.shape[1]))
    dx = ew.sub(red.sum(d, 1), red.sum(d, 2))
    return sh.reshape(dx, self.shape)


@op(node="MultilabelMarginLossBackward0", variants=_F,
    grads={"self": _multilabel_dx}, save=("self", "count", "other", "reduction"))
def multilabel_margin_loss(input, target, reduction):
    """Per row: sum over targets j (up to the first -1) and non-targets i of
    max(0, 1 - (x_j - x_i)) / C."""
    x = input.detach()
    rows = 1 if x.dim() <= 1 else x.shape[0]
    c = 1 if x.dim() == 0 else x.shape[-1]
    t = _host_ints(target).reshape(rows, c)
    if t.size and (t.min() < -1 or t.max() >= c):
        raise RuntimeError("argument #2 'target' is out of range")
    count = np.zeros((rows, c))
    for n in range(rows):
        for k in t[n]:
            if k < 0:
                break
            count[n, k] += 1
    count, other = _like(count, x), _like((count == 0) * 1.0, x)
    with grad_mode.no_grad():
        z, keep, xr = _pair_hinges(x, count, other)
        loss = ew.div(red.sum(ew.mul(ew.clamp_min(z, 0), keep), (1, 2)), c)
        if reduction == "none":
            out = loss if input.dim() > 1 else sh.reshape(loss, ())
        else:
            out = _reduce(loss, reduction)
    return out._data, {"count": count, "other": other, "reduction": reduction}


# ----------------------------------------------------------------------------------------
# losses and distances PyTorch writes as composites of ops (their nodes appear as they are);
# ``numgrad.nn._losses_more`` checks the arguments and reduces with ``reduce``
# ----------------------------------------------------------------------------------------

reduce = _reduce


def _norm(x, p, dim, keepdim=False):
    from numgrad import norm
    return norm(x, p, dim, keepdim=keepdim)


def _clamp_min_value(v, eps):
    """max(v, eps) in value with d/dv = 1: v + (clamped - v), the difference constant."""
    with grad_mode.no_grad():
        bump = ew.sub(ew.clamp_min(v, eps), v)
    return ew.add(v, bump)


def kl_div(input, target, log_target):
    """Pointwise KL(target || exp(input)): e^t (t - x) for log targets, else
    xlogy(t, t) - t x (t log t, 0 where t == 0: the log read at 1 there)."""
    if log_target:
        return ew.mul(un.exp(target), ew.sub(target, input))
    safe = ew.where(ew.eq(target, 0), 1.0, target)
    return ew.sub(ew.mul(target, un.log(safe)), ew.mul(target, input))


def poisson_nll(input, target, log_input, full, eps):
    """Pointwise e^x - t x (log_input) or x - t log(x + eps); ``full`` adds Stirling's
    t log t - t + log(2 pi t) / 2 where t > 1."""
    import math
    if log_input:
        loss = ew.sub(un.exp(input), ew.mul(target, input))
    else:
        loss = ew.sub(input, ew.mul(target, un.log(ew.add(input, eps))))
    if full:
        safe = ew.where(ew.le(target, 1), 2.0, target)
        stirling = ew.add(ew.sub(ew.mul(safe, un.log(safe)), safe),
                          ew.mul(un.log(ew.mul(safe, 2 * math.pi)), 0.5))
        loss = ew.add(loss, ew.where(ew.le(target, 1), 0.0, stirling))
    return loss


def gaussian_nll(input, target, var, full, eps):
    """Pointwise (log max(var, eps) + (input - target)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2
    if full); the clamp is not differentiated (the gradient flows to var as if unclamped)."""
    import math
    var = _clamp_min_value(var, eps)
    loss = ew.mul(ew.add(un.log(var), ew.div(ew.pow(ew.sub(input, target), 2), var)), 0.5)
    if full:
        loss = ew.add(loss, 0.5 * math.log(2 * math.pi))
    return loss


def cosine_similarity(a, b, dim, eps):
    """sum(a / max(|a|, eps) * b / max(|b|, eps)) along ``dim`` of same-shape a, b (the
    clamp not differentiated)."""
    def unit(v):
        return ew.div(v, _clamp_min_value(_norm(v, 2, dim, keepdim=True), eps))
    return red.sum(ew.mul(unit(a), unit(b)), dim)


def pairwise_distance(x1, x2, p, eps, keepdim):
    """||x1 - x2 + eps||_p along the last dim."""
    inner = max(x1.dim(), x2.dim()) - 1
    out = _norm(ew.add.scalar(ew.sub(x1, x2), eps), p, inner, keepdim)
    if out._grad_fn is not None:  # PyTorch calls norm's (Tensor, p, dim) overload here
        out._grad_fn.__class__ = red.NormBackward1
    return out


def pdist(input, p):
    """||x_i - x_j||_p for every pair of rows i < j of 2-D ``input``, in row-major order."""
    from numgrad import tensor
    i, j = np.triu_indices(input.shape[0], 1)
    return _norm(ew.sub(input[tensor(i)], input[tensor(j)]), p, 1)


def cosine_embedding(input1, input2, target, margin, dim):
    """Pointwise 1 - cos(x1, x2) where y == 1, max(0, cos - margin) where y == -1 (cos along
    ``dim``, each squared norm + 1e-12)."""
    dot = red.sum(ew.mul(input1, input2), dim)
    m1 = ew.add(red.sum(ew.mul(input1, input1), dim), 1e-12)
    m2 = ew.add(red.sum(ew.mul(input2, input2), dim), 1e-12)
    cos = ew.div(dot, un.sqrt(ew.mul(m1, m2)))
    pos = ew.where(ew.eq(target, 1), ew.rsub(cos, 1), 0.0)
    neg = ew.where(ew.eq(target, -1), ew.clamp_min(ew.sub(cos, margin), 0), 0.0)
    return ew.add(pos, neg)


def margin_ranking(input1, input2, target, margin):
    """Pointwise max(0, -y (x1 - x2) + margin)."""
    return ew.clamp_min(ew.add(ew.mul(ew.neg(target), ew.sub(input1, input2)), margin), 0)


def hinge_embedding(input, target, margin):
    """Pointwise x where y == 1, max(0, margin - x) where y == -1 (both where y is
    neither)."""
    hinge = ew.where(ew.ne(target, 1), ew.clamp_min(ew.rsub(input, margin), 0), 0.0)
    own = ew.where(ew.ne(target, -1), input, 0.0)
    return ew.add(hinge, own)


def triplet(dist_pos, dist_neg, dist_swap, margin):
    """Pointwise max(0, d(a, p) - min(d(a, n), d(p, n) with swap) + margin)."""
    if dist_swap is not None:
        dist_neg = ew.minimum(dist_neg, dist_swap)
    return ew.clamp_min(ew.sub(ew.add(dist_pos, margin), dist_neg), 0)


def _logsigmoid(x):
    """log sigmoid(x) = -softplus(-x)."""
    return ew.neg(un.softplus(ew.neg(x)))


def multilabel_soft_margin(input, target, weight):
    """Per sample: -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted, averaged over the
    classes (the last dim)."""
    loss = ew.neg(ew.add(ew.mul(target, _logsigmoid(input)),
                         ew.mul(ew.rsub(target, 1), _logsigmoid(ew.neg(input)))))
    if weight is not None:
        loss = ew.mul(loss, weight)
    cdim = input.dim() - 1
    return ew.div(red.sum(loss, cdim), input.shape[cdim])
