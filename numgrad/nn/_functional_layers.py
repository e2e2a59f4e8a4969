"""More normalization, dropout and rearranging layers, the bilinear form and embedding bags,
with PyTorch's argument parsing; the checks and the math are ``numgrad.ops.nn_layers``'s
(composites of ops, as PyTorch writes them, and the ``_embedding_bag`` op)."""

from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.nn._pooling import adaptive_max_pool2d  # noqa: F401  (numgrad.ops.pooling's)
from numgrad.ops import nn_layers as NL

# ========================================================================================
# normalization
# ========================================================================================


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the trailing dims) + eps) * weight; eps defaults to the dtype's
    machine epsilon."""
    input, ns, weight, eps = C.parse("rms_norm", C.RMS_NORM, input, normalized_shape, weight,
                                     eps)
    return NL.rms_norm(input, list(ns), weight, eps)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta."""
    return NL.local_response_norm(input, size, alpha, beta, k, F)


# ========================================================================================
# rearranging
# ========================================================================================


def _shuffle_checks(fn, input, factor, name):
    C.tensor_arg(fn, "input", 1, input)
    return C.int_arg(factor, fn, name, 2)


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = _shuffle_checks("pixel_shuffle", input, upscale_factor, "upscale_factor")
    return NL.pixel_shuffle(input, r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = _shuffle_checks("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    return NL.pixel_unshuffle(input, r)


def channel_shuffle(input, groups):
    """(N, g*k, *) -> channels regrouped as (k, g) (a reshape/transpose)."""
    return NL.channel_shuffle(input, _shuffle_checks("channel_shuffle", input, groups, "groups"))


# ========================================================================================
# channel dropout and the bilinear form
# ========================================================================================


def _channel_dropout(k, input, p, training, inplace):
    """dropout{k}d as PyTorch runs it: its Python checks (p, the rank), then the parse of
    ``feature_dropout``'s arguments."""
    C.check_p(p)
    unbatched = NL.channel_rank(k, input)
    fn = "feature_dropout_" if inplace else "feature_dropout"
    input, p, training = C.parse(fn, C.DROPOUT, input, p, training)
    return NL.feature_dropout(input, p, training, inplace, unbatched)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of (N, C, L) or (C, L) input."""
    return _channel_dropout(1, input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of (N, C, H, W) input (3-D input is taken as (N, C, L), as PyTorch
    does, with its warning)."""
    return _channel_dropout(2, input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of (N, C, D, H, W) or (C, D, H, W) input (other ranks as PyTorch:
    with its warning, a rank-4 one taken as unbatched)."""
    return _channel_dropout(3, input, p, training, inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels of (N, C, *) input."""
    args = C.dropout_args("feature_alpha_dropout", input, p, training, inplace)
    return NL.alpha_dropout(*args, inplace, feature=True)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o] (two matrix products)."""
    return NL.bilinear(*C.parse("bilinear", C.BILINEAR, input1, input2, weight, bias))


# ========================================================================================
# embedding bags
# ========================================================================================


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sum, mean or max of each bag's embedding rows (empty bags give zeros)."""
    NL.bag_mode_checks(mode, scale_grad_by_freq, sparse, per_sample_weights)
    if padding_idx is not None:
        padding_idx = C.int_arg(padding_idx, "embedding_bag", "padding_idx", 9)
    return NL.embedding_bag(input, weight, offsets, max_norm, norm_type, mode,
                            per_sample_weights, include_last_offset, padding_idx)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's zero mean and unit variance."""
    return NL.alpha_dropout(*C.dropout_args("alpha_dropout", input, p, training, inplace),
                            inplace)
