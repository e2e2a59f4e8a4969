"""More normalization, dropout and rearranging layers, the bilinear form and embedding bags,
with PyTorch's checks; the math is ``numgrad.ops.nn_layers`` (composites of ops, as PyTorch
writes them) and the ``_embedding_bag`` op; local response norm is the textbook formula over
``pad`` and ``avg_pool2d``."""

import warnings

import numpy as np

from numgrad import _arrays as A
from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.nn._pooling import adaptive_max_pool2d  # noqa: F401  (numgrad.ops.pooling's)
from numgrad.ops import embedding_bag as EBO
from numgrad.ops import nn_layers as NL
from numgrad.ops import shape as sh
from numgrad.ops._util import dtype_of

# ========================================================================================
# normalization
# ========================================================================================


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the trailing dims) + eps) * weight; eps defaults to the dtype's
    machine epsilon."""
    C.tensor_arg("rms_norm", "input", 1, input)
    ns = list(C.int_list(normalized_shape, "rms_norm", "normalized_shape", 2))
    if weight is not None and list(weight._data.shape) != ns:
        raise RuntimeError("Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight._data.shape)} and normalized_shape = "
                           f"{ns}")
    x = input._data
    if x.ndim < len(ns) or list(x.shape[x.ndim - len(ns):]) != ns:
        raise RuntimeError(
            f"Given normalized_shape={ns}, expected input with shape "
            f"[*{', '.join(map(str, ns))}], but got input of size{list(x.shape)}")
    dt = dtype_of(input)
    if not dt.is_floating_point:
        raise RuntimeError(f"\"rms_norm\" not implemented for '{dt._legacy}'")
    if eps is None:
        eps = float(np.finfo(x.dtype).eps) if x.dtype != np.object_ else 1e-7
    return NL.rms_norm(input, tuple(range(-len(ns), 0)), weight, eps)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta."""
    nd = input.dim()
    if nd < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {nd} dimensions)")
    if input.numel() == 0:
        return input
    shape = input._data.shape
    sq = sh.reshape(input * input, (shape[0], 1, shape[1], -1))
    sq = F.pad(sq, (0, 0, size // 2, (size - 1) // 2))
    div = sh.reshape(F.avg_pool2d(sq, (size, 1), stride=1), shape)
    return input / (div * alpha + k).pow(beta)


# ========================================================================================
# rearranging
# ========================================================================================


def _shuffle_checks(fn, input, factor, name):
    C.tensor_arg(fn, "self", 1, input)
    factor = C.int_arg(factor, fn, name, 2)
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {name}, but got {factor}")
    if input.dim() < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")
    return factor


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = _shuffle_checks("pixel_shuffle", input, upscale_factor, "upscale_factor")
    *b, c, h, w = input._data.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    return NL.pixel_shuffle(input, r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = _shuffle_checks("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    *b, c, h, w = input._data.shape
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    return NL.pixel_unshuffle(input, r)


def channel_shuffle(input, groups):
    """(N, g*k, *) -> channels regrouped as (k, g) (a reshape/transpose)."""
    C.tensor_arg("channel_shuffle", "self", 1, input)
    groups = C.int_arg(groups, "channel_shuffle", "groups", 2)
    if input.dim() < 3:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input._data.shape)}")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input._data.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    return NL.channel_shuffle(input, groups)


# ========================================================================================
# channel dropout and the bilinear form
# ========================================================================================


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of (N, C, L) or (C, L) input."""
    _check_p(p)
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    if nd == 2:
        x = input.unsqueeze_(0) if inplace else sh.unsqueeze(input, 0)
        out = NL.feature_dropout(x, p, training, inplace)
        return out.squeeze_(0) if inplace else sh.squeeze(out, 0)
    return NL.feature_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of (N, C, H, W) input (3-D input is taken as (N, C, L), as PyTorch
    does, with its warning)."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return NL.feature_dropout(input, p, training, inplace)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o] (two matrix products)."""
    for i, t in enumerate((input1, input2, weight), 1):
        C.tensor_arg("bilinear", f"input{i}" if i < 3 else "weight", i, t)
    s1, s2, w = input1._data.shape, input2._data.shape, weight._data.shape
    if len(s1) != len(s2):
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {len(s1)} and "
                           f"{len(s2)}")
    for i in range(len(s1) - 1):
        if s1[i] != s2[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {s1[i]} and {s2[i]}")
    if len(w) != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, got {len(w)}")
    if s1[-1] != w[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {s1[-1]} "
                           f"but expected {w[1]}")
    if s2[-1] != w[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {s2[-1]} "
                           f"but expected {w[2]}")
    if bias is not None and tuple(bias._data.shape) != (w[0],):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias._data.shape[0] if bias.dim() else 0} but expected {w[0]}")
    return NL.bilinear(input1, input2, weight, bias)


# ========================================================================================
# embedding bags
# ========================================================================================


def _bag_offsets(input, offsets, include_last_offset):
    """Flat indices and the (start, stop) of each bag, with PyTorch's checks."""
    nd = input.dim()
    if nd == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {type(offsets)}")
        n, length = input._data.shape
        return sh.reshape(input, (-1,)), [(b * length, (b + 1) * length) for b in range(n)]
    if nd != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {nd}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    starts = [int(v) for v in offsets.tolist()]
    size = input._data.shape[0]
    if starts and starts[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {starts[0]}")
    if starts and starts[-1] > size:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {size} but got "
                           f"offsets[-1] of {starts[-1]}")
    ends = starts[1:] + ([] if include_last_offset else [size])
    return input, list(zip(starts, ends))


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sum, mean or max of each bag's embedding rows (empty bags give zeros)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not "
                                  "supported by numgrad")
    rows = weight._data.shape[0]
    if padding_idx is not None:
        padding_idx = C.int_arg(padding_idx, "embedding_bag", "padding_idx", 9)
        if not -rows <= padding_idx < rows:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{rows} "
                               f"through {rows - 1}, but got {padding_idx}")
        padding_idx += rows if padding_idx < 0 else 0
    dt = dtype_of(input)
    if dt.is_floating_point or dt.is_complex or str(dt) not in ("torch.int64", "torch.int32"):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{input.type()} instead (while checking arguments for embedding_bag)")
    flat, bags = _bag_offsets(input, offsets, include_last_offset)
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= rows):
        raise RuntimeError("Expected i < index_size to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request "
                           "to PyTorch.)")
    if max_norm is not None:
        F._embedding_renorm(weight, A.host(A.contiguous(flat._data).reshape(-1)), max_norm,
                            norm_type)
    if weight._data.dtype in (np.float32, np.float64):
        # the bags described on the host for the declared op ``_embedding_bag``
        # (``EmbeddingBagBackward0``, ``numgrad/ops/embedding_bag.py``)
        psw_shape = tuple(per_sample_weights.shape) if per_sample_weights is not None else None
        prepared = EBO.Bags(flat, bags, mode, padding_idx, rows, psw_shape)
        return EBO._embedding_bag(weight, per_sample_weights, prepared)
    if padding_idx is not None:
        raise NotImplementedError("embedding_bag: padding_idx is supported by numgrad for "
                                  "float32 and float64 weights")
    return NL.bag_reduce(F.embedding(flat, weight), per_sample_weights, bags, mode,
                         input.dim() == 2, weight)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's zero mean and unit variance."""
    _check_p(p)
    return NL.alpha_dropout(input, p, training, inplace)
