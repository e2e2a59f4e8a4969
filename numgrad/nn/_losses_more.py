"""More losses and distances, as in ``torch.nn.functional``, with PyTorch's argument parsing;
the kernels' checks are ``numgrad.ops.nn_losses``'s, the math ``numgrad.ops.losses``'s:
composites of numgrad ops where PyTorch writes composites (the same nodes appear), declared
ops for huber, soft margin, multi margin and multilabel margin."""

from numgrad.nn import _checks as C
from numgrad.ops import losses as L
from numgrad.ops import nn_losses as NLo


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: xlogy(t, t) - t x, or e^t (t - x) for log targets;
    'batchmean' sums and divides by the batch size."""
    if size_average is not None or reduce is not None:
        r, given = C.reduction(reduction, size_average, reduce), None
    else:
        r, given = C.reduction("sum" if reduction == "batchmean" else reduction), reduction
    input, target, log_target = C.parse("kl_div", C.KL_DIV, input, target, log_target)
    return NLo.kl_div(input, target, r, log_target, given)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 for |d| < delta, else delta (|d| - 0.5 delta), d = input - target
    (``HuberLossBackward0``)."""
    C.sizes(input, target)
    if weight is None:
        reduction = C.reduction(reduction)
    else:
        C.attribute(weight, "size")
        NLo.same_weight_size(input, weight)
    delta = C.float_arg(delta, "huber_loss", "delta", 4)
    target = NLo.huber_dtypes(input, target)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is None:
        return L.huber_loss(input, target, reduction, delta)
    return NLo.weighted_huber(input, target, weight, reduction, delta)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """e^x - t x (log_input) or x - t log(x + eps); ``full`` adds Stirling's
    t log t - t + log(2 pi t) / 2 where t > 1."""
    if size_average is not None or reduce is not None:
        reduction = C.reduction(None, size_average, reduce)
    if reduction != "none" and reduction != "mean" and reduction != "sum":
        raise ValueError(reduction + " is not a valid value for reduction")
    args = C.parse("poisson_nll_loss", C.POISSON_NLL, input, target, log_input, full, eps)
    return L.reduce(L.poisson_nll(*args), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log max(var, eps) + (input - target)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 if full);
    the clamp is not differentiated (the gradient flows to var as if unclamped)."""
    return NLo.gaussian_nll(input, target, var, full, eps, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + e^(-y x)) (``SoftMarginLossBackward0``; the target is not differentiable)."""
    C.tensors("soft_margin_loss", "input target", input, target)
    reduction = C.reduction(reduction, size_average, reduce)
    return NLo.soft_margin(input, target, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) along ``dim`` (the clamp not
    differentiated)."""
    return NLo.cosine_similarity(*C.parse("cosine_similarity", C.COSINE, x1, x2, dim, eps))


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim."""
    return L.pairwise_distance(*C.parse("pairwise_distance", C.PAIRWISE, x1, x2, p, eps,
                                        keepdim))


def pdist(input, p=2):
    """||x_i - x_j||_p for every pair of rows i < j, in row-major order."""
    return NLo.pdist(*C.parse("pdist", "Tensor input, float p", input, p))


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where y == 1, max(0, cos - margin) where y == -1."""
    reduction = C.reduction(reduction, size_average, reduce)
    input1, input2, target, margin = C.parse("cosine_embedding_loss", C.TRIPLE_MARGIN, input1,
                                             input2, target, margin)
    td = NLo.pair_target_dims(input1, input2, target)
    return L.reduce(L.cosine_embedding(input1, input2, target, margin, td), reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    reduction = C.reduction(reduction, size_average, reduce)
    NLo.ranking_dims(input1, input2, target)
    args = C.parse("margin_ranking_loss", C.TRIPLE_MARGIN, input1, input2, target, margin)
    return L.reduce(L.margin_ranking(*args), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where y == 1, max(0, margin - x) where y == -1 (both terms where y is neither)."""
    reduction = C.reduction(reduction, size_average, reduce)
    args = C.parse("hinge_embedding_loss", "Tensor input, Tensor target, float margin", input,
                   target, margin)
    return L.reduce(L.hinge_embedding(*args), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin) with pairwise_distance (d(p, n) too with swap)."""
    reduction = C.reduction(reduction, size_average, reduce)
    NLo.positive_margin(margin)
    anchor, positive, negative, margin, p, eps, swap = C.parse(
        "triplet_margin_loss", C.TRIPLET, anchor, positive, negative, margin, p, eps, swap)
    NLo.triplet_dims(anchor, positive, negative)
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    ds = pairwise_distance(positive, negative, p, eps) if swap else None
    return L.reduce(L.triplet(dp, dn, ds, margin), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """The triplet loss with any distance (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    NLo.positive_margin(margin)
    NLo.triplet_dims(anchor, positive, negative)
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


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of w_y max(0, margin - x_y + x_i)^p / C (``MultiMarginLossBackward0``)."""
    reduction = C.reduction(reduction, size_average, reduce)
    NLo.multi_margin_python(p, weight)
    args = C.parse("multi_margin_loss", C.MULTI_MARGIN, input, target, p, margin, weight)
    return NLo.multi_margin(*args, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over targets j and non-targets i of max(0, 1 - (x_j - x_i)) / C; each row's targets
    end at the first -1 (``MultilabelMarginLossBackward0``)."""
    reduction = C.reduction(reduction, size_average, reduce)
    return NLo.multilabel_margin(input, target, reduction)
