"""``numgrad.nn.functional``: the layers and losses as functions, with PyTorch's node names.

Forward passes run Numba kernels (convolutions as BLAS products over im2col columns).
Backward rules run kernels too; when a graph is being recorded for higher-order gradients
(``create_graph=True``), the same rules are written with differentiable numgrad ops.
"""


from numgrad._shape import broadcast_shapes
from numgrad.nn import _checks as C
from numgrad.ops import elementwise as ew
from numgrad.ops import nn_activation as NA
from numgrad.ops import nn_checks as K
from numgrad.ops import nn_layers as NL
from numgrad.ops import nn_losses, norms
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops.fused import addmm  # noqa: F401  (linear's op; nn.RNN cells call it)

# activations that exist as tensor ops
tanh = un.tanh
sigmoid = un.sigmoid


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum exp(x) along ``dim`` (``SoftmaxBackward0``)."""
    return red.softmax(*C.softmax_args("softmax", input, dim, dtype, _stacklevel))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim`` (``LogSoftmaxBackward0``)."""
    return red.log_softmax(*C.softmax_args("log_softmax", input, dim, dtype, _stacklevel))


# ========================================================================================
# linear
# ========================================================================================


def linear(input, weight, bias=None):
    """input @ weight^T + bias (``AddmmBackward0`` for 2-D input, as in PyTorch)."""
    C.tensors("linear", "input weight", input, weight)
    xd, wd = input._data.ndim, weight._data.ndim
    if xd == 0 or wd == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {xd}D "
                           f"and {wd}D")
    if bias is not None:
        C.tensor_arg("linear", "bias", 3, bias)
    return NL.linear(input, weight, bias)


# ========================================================================================
# dropout
# ========================================================================================


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale by 1/(1-p) (``MulBackward0``)."""
    return NL.dropout(*C.dropout_args("dropout", input, p, training, inplace), inplace)


# ========================================================================================
# normalization
# ========================================================================================


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Batch normalization over (N, C, ...) per channel (``NativeBatchNormBackward0``)."""
    NL.batch_norm_python(input, training, eps)
    x, w, b, rm, rv, *rest = C.parse("batch_norm", C.BATCH_NORM, input, weight, bias,
                                     running_mean, running_var, training, momentum, eps)
    return NL.batch_norm(x, rm, rv, w, b, *rest)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalize over the trailing ``normalized_shape`` dims (``NativeLayerNormBackward0``)."""
    if NL.unwatched():  # nothing to record: the kernel alone where the arguments allow
        out = norms.layer_norm_no_graph(input, normalized_shape, weight, bias, eps)
        if out is not None:
            return out
    return NL.layer_norm(*C.parse("layer_norm", C.LAYER_NORM, input, normalized_shape, weight,
                                  bias, eps))


# ========================================================================================
# embedding and GELU
# ========================================================================================


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at integer ``input`` (``EmbeddingBackward0``). ``sparse=True``
    gives the same gradient values as a dense tensor."""
    if padding_idx is not None:  # (PyTorch's Python: then -1 for none)
        NL.check_padding_idx(padding_idx, weight.size(0))
        if padding_idx < 0:
            padding_idx += weight.size(0)
    if max_norm is not None:
        _, _, max_norm, norm_type = C.parse("embedding_renorm_", C.RENORM, weight, input,
                                            max_norm, norm_type)
    weight, input, padding_idx, scale_grad_by_freq, _ = C.parse(
        "embedding", C.EMBEDDING, weight, input, -1 if padding_idx is None else padding_idx,
        scale_grad_by_freq, sparse)
    return NL.embedding(input, weight, padding_idx if padding_idx >= 0 else None, max_norm,
                        norm_type, scale_grad_by_freq)


def relu(input, inplace=False):
    """max(x, 0) (``ReluBackward0``); in place with ``inplace=True``."""
    return input.relu_() if inplace else ew.relu(input)


def gelu(input, *, approximate="none"):
    """x Phi(x) (``GeluBackward0``); ``approximate='tanh'`` uses the tanh formula."""
    return NA.gelu(*C.parse("gelu", "Tensor input, str *approximate", input, approximate))


def silu(input, inplace=False):
    C.tensor_arg("silu", "input", 1, input)
    return NA.silu(input, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    C.numbers("leaky_relu", input, negative_slope=negative_slope)
    return NA.leaky_relu(input, negative_slope, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + e^(beta x)) / beta, x where beta x > threshold (the registry's ``softplus``,
    ``SoftplusBackward0``)."""
    C.numbers("softplus", input, beta=beta, threshold=threshold)
    return un.softplus(input, beta, threshold)


def flatten(input, start_dim=0, end_dim=-1):
    return sh.flatten(input, start_dim, end_dim)


# ========================================================================================
# losses
# ========================================================================================


def _pointwise_loss_args(fn, input, target, size_average, reduce, reduction, weight=None):
    """What mse/l1/smooth_l1 check before computing: tensors, the size warning, the reduction
    and the broadcast shape (PyTorch's broadcast_tensors error)."""
    C.sizes(input, target)
    reduction = C.reduction(reduction, size_average, reduce)
    shape = broadcast_shapes(input._data.shape, target._data.shape)
    if weight is not None:
        C.tensor_arg("mse_loss", "weight", 3, weight)
    return reduction, shape


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (``MseLossBackward0``)."""
    reduction, shape = _pointwise_loss_args("mse_loss", input, target, size_average, reduce,
                                            reduction, weight)
    return nn_losses.mse(input, target, reduction, shape, weight)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction, _ = _pointwise_loss_args("l1_loss", input, target, size_average, reduce,
                                        reduction, weight)
    return nn_losses.l1(input, target, reduction, weight)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction, _ = _pointwise_loss_args("smooth_l1_loss", input, target, size_average, reduce,
                                        reduction)
    if beta != 0.0:  # (beta 0 is l1_loss, in Python)
        beta = C.float_arg(beta, "smooth_l1_loss", "beta", 4)
    return nn_losses.smooth_l1(input, target, reduction, beta)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of class indices (``NllLossBackward0``)."""
    C.tensors("nll_loss_nd", "input target weight", input, target, weight)
    reduction = C.reduction(reduction, size_average, reduce)
    ignore_index = C.int_arg(ignore_index, "nll_loss_nd", "ignore_index", 5)
    return nn_losses.nll(input, target, weight, ignore_index, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax + nll_loss for class indices; probabilities as targets also work."""
    fn = "cross_entropy_loss"
    C.tensors(fn, "input target weight", input, target, weight)
    reduction = C.reduction(reduction, size_average, reduce)
    ignore_index = C.int_arg(ignore_index, fn, "ignore_index", 5)
    label_smoothing = C.float_arg(label_smoothing, fn, "label_smoothing", 6)
    return nn_losses.cross_entropy(input, target, weight, ignore_index, reduction,
                                   label_smoothing)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), logs clamped at -100 (``BinaryCrossEntropyBackward0``)."""
    reduction = C.reduction(reduction, size_average, reduce)
    C.has_size(target, input, weight)
    args = C.parse("binary_cross_entropy", C.BCE, input, target, weight)
    K.not_differentiable("binary_cross_entropy", weight=weight)
    return nn_losses.bce(*args, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """BCE on logits, stable for any logit (``BinaryCrossEntropyWithLogitsBackward0``); the
    loss has the target's (floating) dtype, as in PyTorch."""
    reduction = C.reduction(reduction, size_average, reduce)
    C.has_size(target, input)
    args = C.parse("binary_cross_entropy_with_logits", C.BCE + ", Tensor? pos_weight", input,
                   target, weight, pos_weight)
    K.not_differentiable("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    return nn_losses.bce_with_logits(*args, reduction)


def one_hot(tensor, num_classes=-1):
    """Integer class indices as one-hot rows (int64)."""
    C.tensor_arg("one_hot", "input", 1, tensor)
    num_classes = C.int_arg(num_classes, "one_hot", "num_classes", 2)
    return NL.one_hot(tensor, num_classes)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    n = red.norm(input, p, dim, keepdim=True)
    return ew.div(input, ew.clamp_min(n, eps))


from numgrad.nn._attention import (  # noqa: E402,F401,I001  (attention, in its own module)
    multi_head_attention_forward, scaled_dot_product_attention)
from numgrad.nn._conv import (  # noqa: E402,F401,I001  (convolutions, unfold, fold)
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold, unfold)
from numgrad.nn._functional_extra import (  # noqa: E402,F401,I001  (norm, pad, resize)
    group_norm, instance_norm, interpolate, pad, upsample, upsample_bilinear, upsample_nearest)
from numgrad.nn._pooling import (  # noqa: E402,F401,I001  (every pool)
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d, adaptive_max_pool3d_with_indices, avg_pool1d, avg_pool2d, avg_pool3d,
    lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d, max_pool1d_with_indices, max_pool2d,
    max_pool2d_with_indices, max_pool3d, max_pool3d_with_indices, max_unpool1d, max_unpool2d,
    max_unpool3d)
from numgrad.nn._losses_more import (  # noqa: E402,F401,I001  (more losses and distances)
    cosine_embedding_loss, cosine_similarity, gaussian_nll_loss, hinge_embedding_loss,
    huber_loss, kl_div, margin_ranking_loss, multi_margin_loss, multilabel_margin_loss,
    multilabel_soft_margin_loss, pairwise_distance, pdist, poisson_nll_loss, soft_margin_loss,
    triplet_margin_loss, triplet_margin_with_distance_loss)
from numgrad.nn._functional_layers import (  # noqa: E402,F401,I001  (more norm/other layers)
    bilinear, channel_shuffle, dropout1d, dropout2d, dropout3d, embedding_bag,
    feature_alpha_dropout, local_response_norm, pixel_shuffle, pixel_unshuffle, rms_norm,
    alpha_dropout)
from numgrad.nn._activations_more import (  # noqa: E402,F401,I001  (more activations)
    celu, celu_, elu, elu_, glu, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_,
    leaky_relu_, logsigmoid, mish, prelu, relu6, relu_, rrelu, rrelu_, selu, selu_, softmin,
    softshrink, softsign, tanhshrink, threshold_)
from numgrad.nn import _activations_more  # noqa: E402,I001

threshold = _activations_more.threshold  # (a name softplus's argument also has)

# PyTorch binds these in C, where its parser words "(position N)" only for an argument given
# by position (its Python functions pass theirs on by position)
for _name in ("adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear",
              "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "gelu", "hardshrink",
              "linear", "logsigmoid", "one_hot", "pairwise_distance", "pdist", "pixel_shuffle",
              "pixel_unshuffle", "prelu", "scaled_dot_product_attention", "softplus",
              "softshrink", "celu_", "elu_", "hardtanh_", "leaky_relu_", "rrelu_", "selu_",
              "threshold_"):
    globals()[_name] = C.keywords(globals()[_name])
