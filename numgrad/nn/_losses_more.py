"""More losses and distances, as in ``torch.nn.functional``, with PyTorch's argument checks;
the math is ``numgrad.ops.losses``: composites of numgrad ops where PyTorch writes composites
(the same nodes appear), declared ops for huber, soft margin, multi margin and multilabel
margin."""

import warnings

import numpy as np

from numgrad import _dtype
from numgrad.nn import _checks as C
from numgrad.ops import elementwise as ew
from numgrad.ops import losses as L
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import dtype_of

__all__ = ["kl_div", "huber_loss", "poisson_nll_loss", "gaussian_nll_loss", "soft_margin_loss",
           "cosine_similarity", "pairwise_distance", "pdist", "cosine_embedding_loss",
           "margin_ranking_loss", "hinge_embedding_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss"]


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
    raise C.not_implemented("huber_cpu", input)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: xlogy(t, t) - t x, or e^t (t - x) for log targets;
    'batchmean' sums and divides by the batch size."""
    C.tensors("kl_div", "input target", input, target)
    if size_average is None and reduce is None:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support "
                "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                "major release.", stacklevel=2)
        r = C.reduction("sum" if reduction == "batchmean" else reduction)
    else:
        r = C.reduction(reduction, size_average, reduce)
    out = L.reduce(L.kl_div(input, target, log_target), r)
    if reduction == "batchmean" and size_average is None and reduce is None and input.dim():
        out = ew.div(out, input.shape[0])
    return out


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 for |d| < delta, else delta (|d| - 0.5 delta), d = input - target
    (``HuberLossBackward0``)."""
    C.tensors("huber_loss", "input target", input, target)
    C.check_same_size(input, target)
    target = _huber_dtypes(input, target)
    if weight is None:
        return L.huber_loss(input, target, C.reduction(reduction), float(delta))
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = ew.mul(L.huber_loss(input, target, "none", float(delta)), weight)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                         "'sum'.")
    return L.reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """e^x - t x (log_input) or x - t log(x + eps); ``full`` adds Stirling's
    t log t - t + log(2 pi t) / 2 where t > 1."""
    reduction = C.reduction(reduction, size_average, reduce)
    return L.reduce(L.poisson_nll(input, target, log_input, full, eps), reduction)


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
    return L.reduce(L.gaussian_nll(input, target, var, full, eps), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + e^(-y x)) (``SoftMarginLossBackward0``; the target is not differentiable)."""
    C.tensors("soft_margin_loss", "input target", input, target)
    reduction = C.reduction(reduction, size_average, reduce)
    C.not_differentiable("soft_margin_loss", target=target)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type {_dtype.result_type(input, 1.0)._legacy} can't be cast "
                           f"to the desired output type {_legacy(input)}")
    if target.dtype != input.dtype:  # the loss has the input's dtype
        target = target.to(input.dtype)
    return L.soft_margin_loss(input, target, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) along ``dim`` (the clamp not
    differentiated)."""
    C.tensors("cosine_similarity", "x1 x2", x1, x2)
    dt = ew.add(x1.detach().flatten()[:0], x2.detach().flatten()[:0]).dtype
    if not dt.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{dt._legacy}")
    shape = tuple(np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    return L.cosine_similarity(x1.expand(shape), x2.expand(shape), dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim."""
    C.tensors("pairwise_distance", "x1 x2", x1, x2)
    return L.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2):
    """||x_i - x_j||_p for every pair of rows i < j, in row-major order."""
    C.tensor_arg("pdist", "input", 1, input)
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return L.pdist(input, p)


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
    reduction = C.reduction(reduction, size_average, reduce)
    td = _pair_target_dims(input1, input2, target)
    return L.reduce(L.cosine_embedding(input1, input2, target, margin, td), reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    reduction = C.reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return L.reduce(L.margin_ranking(input1, input2, target, margin), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where y == 1, max(0, margin - x) where y == -1 (both terms where y is neither)."""
    reduction = C.reduction(reduction, size_average, reduce)
    return L.reduce(L.hinge_embedding(input, target, margin), reduction)


def _triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p == n):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin) with pairwise_distance (d(p, n) too with swap)."""
    reduction = C.reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _triplet_dims(anchor, positive, negative)
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    ds = pairwise_distance(positive, negative, p, eps) if swap else None
    return L.reduce(L.triplet(dp, dn, ds, margin), reduction)


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
    return L.reduce(L.triplet(dist(anchor, positive), dist(anchor, negative), ds, margin),
                    reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted, averaged over classes."""
    if size_average is not None or reduce is not None:
        reduction = C.reduction(None, size_average, reduce)
    loss = L.multilabel_soft_margin(input, target, weight)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return L.reduce(loss, reduction)


def _vector_or_matrix(input):
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    return nd


def _margin_dtypes(input, target, weight, kernel):
    C.require_float(input, kernel)
    if target.dtype != _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {_legacy(target)}")
    C.same_type(input, weight)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of w_y max(0, margin - x_y + x_i)^p / C (``MultiMarginLossBackward0``)."""
    reduction = C.reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    nd = _vector_or_matrix(input)
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
    C.not_differentiable("multi_margin_loss", weight=weight)
    return L.multi_margin_loss(input, target, int(p), float(margin), weight, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over targets j and non-targets i of max(0, 1 - (x_j - x_i)) / C; each row's targets
    end at the first -1 (``MultilabelMarginLossBackward0``)."""
    reduction = C.reduction(reduction, size_average, reduce)
    nd = _vector_or_matrix(input)
    ts = tuple(target.shape)
    if (nd <= 1 and (target.dim() > 1 or target.numel() != (1 if nd == 0 else input.shape[0]))) \
            or (nd == 2 and ts != tuple(input.shape)):
        raise RuntimeError(f"inconsistent target size: {list(ts)} for input of size: "
                           f"{list(input.shape)}")
    _margin_dtypes(input, target, None, "multilabel_margin_loss_forward_out_frame")
    return L.multilabel_margin_loss(input, target, reduction)
