"""More losses and distances, as in ``torch.nn.functional``: the ones PyTorch writes as
composites are composites of numgrad ops here (the same nodes appear); huber, soft margin,
multi margin and multilabel margin are declared ops (``numgrad.ops.losses``)."""

import math
import warnings

import numpy as np

from numgrad import _dtype
from numgrad.autograd import grad_mode
from numgrad.nn.functional import _check_same_size, _not_differentiable, _reduction, _tensor_arg
from numgrad.ops import elementwise as ew
from numgrad.ops import losses as L
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import dtype_of

__all__ = ["kl_div", "huber_loss", "poisson_nll_loss", "gaussian_nll_loss", "soft_margin_loss",
           "cosine_similarity", "pairwise_distance", "pdist", "cosine_embedding_loss",
           "margin_ranking_loss", "hinge_embedding_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss"]


def _apply(loss, reduction):
    if reduction == "mean":
        return red.mean(loss)
    if reduction == "sum":
        return red.sum(loss)
    return loss


def _legacy(t):
    return dtype_of(t)._legacy


def _huber_dtypes(input, target):
    """PyTorch's huber_loss dtype rules: the loss has the (floating) input's dtype; the target
    is cast to it."""
    xd, td = dtype_of(input), dtype_of(target)
    if xd.is_floating_point:
        return target if td == xd else target.to(xd)
    if xd != td:
        rt = _dtype.result_type(input, target)
        raise RuntimeError(f"result type {rt._legacy} can't be cast to the desired output type "
                           f"{xd._legacy}")
    if not xd.is_floating_point:
        raise NotImplementedError(f"\"huber_cpu\" not implemented for '{xd._legacy}'")


def _logsigmoid(x):
    """log sigmoid(x) = -softplus(-x)."""
    return ew.neg(un.softplus(ew.neg(x)))


def _norm(x, p, dim, keepdim=False):
    from numgrad import norm
    return norm(x, p, dim, keepdim=keepdim)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: xlogy(t, t) - t x, or e^t (t - x) for log targets;
    'batchmean' sums and divides by the batch size."""
    _tensor_arg("kl_div", "input", 1, input)
    _tensor_arg("kl_div", "target", 2, target)
    if size_average is None and reduce is None:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support "
                "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                "major release.", stacklevel=2)
        r = _reduction("sum" if reduction == "batchmean" else reduction)
    else:
        r = _reduction(reduction, size_average, reduce)
    if log_target:
        loss = ew.mul(un.exp(target), ew.sub(target, input))
    else:
        # xlogy(t, t) = t log t, 0 where t == 0 (log read at 1 there)
        safe = ew.where(ew.eq(target, 0), 1.0, target)
        loss = ew.sub(ew.mul(target, un.log(safe)), ew.mul(target, input))
    out = _apply(loss, r)
    if reduction == "batchmean" and size_average is None and reduce is None and input.dim():
        out = ew.div(out, input.shape[0])
    return out


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 for |d| < delta, else delta (|d| - 0.5 delta), d = input - target
    (``HuberLossBackward0``)."""
    _tensor_arg("huber_loss", "input", 1, input)
    _tensor_arg("huber_loss", "target", 2, target)
    _check_same_size(input, target)
    target = _huber_dtypes(input, target)
    if weight is None:
        return L.huber_loss(input, target, _reduction(reduction), float(delta))
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = ew.mul(L.huber_loss(input, target, "none", float(delta)), weight)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return red.sum(loss)
    if reduction == "mean":
        return red.mean(loss)
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """e^x - t x (log_input) or x - t log(x + eps); ``full`` adds Stirling's
    t log t - t + log(2 pi t) / 2 where t > 1."""
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = ew.sub(un.exp(input), ew.mul(target, input))
    else:
        loss = ew.sub(input, ew.mul(target, un.log(ew.add(input, eps))))
    if full:
        safe = ew.where(ew.le(target, 1), 2.0, target)
        stirling = ew.add(ew.sub(ew.mul(safe, un.log(safe)), safe),
                          ew.mul(un.log(ew.mul(safe, 2 * math.pi)), 0.5))
        loss = ew.add(loss, ew.where(ew.le(target, 1), 0.0, stirling))
    return _apply(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log max(var, eps) + (input - target)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 if full);
    the clamp is not differentiated (the gradient flows to var as if unclamped)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = ew.mul(un.exp(ew.mul(input.detach(), 0.0)), var)
    elif bool(ew.lt(var, 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = sh.unsqueeze(var, -1)
        elif input.dim() == var.dim() and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # max(var, eps) in value, d/dvar = 1: var + (clamped - var) with the difference constant
    with grad_mode.no_grad():
        bump = ew.sub(ew.clamp_min(var, eps), var)
    var = ew.add(var, bump)
    loss = ew.mul(ew.add(un.log(var), ew.div(ew.pow(ew.sub(input, target), 2), var)), 0.5)
    if full:
        loss = ew.add(loss, 0.5 * math.log(2 * math.pi))
    return _apply(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + e^(-y x)) (``SoftMarginLossBackward0``; the target is not differentiable)."""
    _tensor_arg("soft_margin_loss", "input", 1, input)
    _tensor_arg("soft_margin_loss", "target", 2, target)
    reduction = _reduction(reduction, size_average, reduce)
    _not_differentiable("soft_margin_loss", target=target)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type {_dtype.result_type(input, 1.0)._legacy} can't be cast "
                           f"to the desired output type {_legacy(input)}")
    if target.dtype != input.dtype:  # the loss has the input's dtype
        target = target.to(input.dtype)
    return L.soft_margin_loss(input, target, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) along ``dim`` (the clamp not
    differentiated)."""
    _tensor_arg("cosine_similarity", "x1", 1, x1)
    _tensor_arg("cosine_similarity", "x2", 2, x2)
    dt = ew.add(x1.detach().flatten()[:0], x2.detach().flatten()[:0]).dtype
    if not dt.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{dt._legacy}")
    shape = tuple(np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    a, b = x1.expand(shape), x2.expand(shape)

    def unit(v):
        n = _norm(v, 2, dim, keepdim=True)
        with grad_mode.no_grad():
            bump = ew.sub(ew.clamp_min(n, eps), n)
        return ew.div(v, ew.add(n, bump))
    return red.sum(ew.mul(unit(a), unit(b)), dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim."""
    _tensor_arg("pairwise_distance", "x1", 1, x1)
    _tensor_arg("pairwise_distance", "x2", 2, x2)
    inner = max(x1.dim(), x2.dim()) - 1
    return _norm(ew.add(ew.sub(x1, x2), eps), p, inner, keepdim)


def pdist(input, p=2):
    """||x_i - x_j||_p for every pair of rows i < j, in row-major order."""
    _tensor_arg("pdist", "input", 1, input)
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    from numgrad import tensor
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    d = ew.sub(input[tensor(i)], input[tensor(j)])
    return _norm(d, p, 1)


def _pair_target_dims(input1, input2, target):
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if td == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    return td


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where y == 1, max(0, cos - margin) where y == -1."""
    reduction = _reduction(reduction, size_average, reduce)
    td = _pair_target_dims(input1, input2, target)
    dot = red.sum(ew.mul(input1, input2), td)
    m1 = ew.add(red.sum(ew.mul(input1, input1), td), 1e-12)
    m2 = ew.add(red.sum(ew.mul(input2, input2), td), 1e-12)
    cos = ew.div(dot, un.sqrt(ew.mul(m1, m2)))
    pos = ew.where(ew.eq(target, 1), ew.rsub(cos, 1), 0.0)
    neg = ew.where(ew.eq(target, -1), ew.clamp_min(ew.sub(cos, margin), 0), 0.0)
    return _apply(ew.add(pos, neg), reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    loss = ew.clamp_min(ew.add(ew.mul(ew.neg(target), ew.sub(input1, input2)), margin), 0)
    return _apply(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where y == 1, max(0, margin - x) where y == -1 (both terms where y is neither)."""
    reduction = _reduction(reduction, size_average, reduce)
    hinge = ew.where(ew.ne(target, 1), ew.clamp_min(ew.rsub(input, margin), 0), 0.0)
    own = ew.where(ew.ne(target, -1), input, 0.0)
    return _apply(ew.add(hinge, own), reduction)


def _triplet(dist_pos, dist_neg, dist_swap, margin, reduction):
    if dist_swap is not None:
        dist_neg = ew.minimum(dist_neg, dist_swap)
    return _apply(ew.clamp_min(ew.sub(ew.add(dist_pos, margin), dist_neg), 0), reduction)


def _triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p == n):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin) with pairwise_distance (d(p, n) too with swap)."""
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _triplet_dims(anchor, positive, negative)
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    ds = pairwise_distance(positive, negative, p, eps) if swap else None
    return _triplet(dp, dn, ds, margin, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """The triplet loss with any distance (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _triplet_dims(anchor, positive, negative)
    dist = distance_function if distance_function is not None else pairwise_distance
    ds = dist(positive, negative) if swap else None
    return _triplet(dist(anchor, positive), dist(anchor, negative), ds, margin, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted, averaged over classes."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(None, size_average, reduce)
    loss = ew.neg(ew.add(ew.mul(target, _logsigmoid(input)),
                         ew.mul(ew.rsub(target, 1), _logsigmoid(ew.neg(input)))))
    if weight is not None:
        loss = ew.mul(loss, weight)
    cdim = input.dim() - 1
    loss = ew.div(red.sum(loss, cdim), input.shape[cdim])
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _apply(loss, reduction)


def _margin_dtypes(input, target, weight, kernel):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_legacy(input)}'")
    if target.dtype != _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {_legacy(target)}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_legacy(input)} but found {_legacy(weight)}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of w_y max(0, margin - x_y + x_i)^p / C (``MultiMarginLossBackward0``)."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    rows = 1 if nd <= 1 else input.shape[0]
    c = 1 if nd == 0 else input.shape[-1]
    if target.dim() > 1 or target.numel() != rows:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{rows}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    if weight is not None and (weight.dim() > 1 or weight.numel() != c):
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    _margin_dtypes(input, target, weight, "multi_margin_loss_cpu_kernel")
    _not_differentiable("multi_margin_loss", weight=weight)
    return L.multi_margin_loss(input, target, int(p), float(margin), weight, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over targets j and non-targets i of max(0, 1 - (x_j - x_i)) / C; each row's targets
    end at the first -1 (``MultilabelMarginLossBackward0``)."""
    reduction = _reduction(reduction, size_average, reduce)
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    ts = tuple(target.shape)
    if (nd <= 1 and (target.dim() > 1 or target.numel() != (1 if nd == 0 else input.shape[0]))) \
            or (nd == 2 and ts != tuple(input.shape)):
        raise RuntimeError(f"inconsistent target size: {list(ts)} for input of size: "
                           f"{list(input.shape)}")
    _margin_dtypes(input, target, None, "multilabel_margin_loss_forward_out_frame")
    return L.multilabel_margin_loss(input, target, reduction)
