"""More pooling, normalization and rearranging layers, all composed from existing numgrad ops
(whose math runs in kernels): 1-d pooling is 2-d pooling on a unit height (as PyTorch does,
so the node is ``SqueezeBackward1``), adaptive max pooling is per-window maxima, RMS norm and
local response norm are the textbook formulas, pixel (un)shuffle is a reshape/permute."""

import warnings

import numpy as np

from numgrad import _arrays as A
from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.ops import elementwise as ew
from numgrad.ops import linalg as la
from numgrad.ops import shape as sh
from numgrad.ops._util import _wrap, dtype_of

# ========================================================================================
# 1-d pooling
# ========================================================================================


def _one_int(fn, name, v, pos, allow_empty=False):
    """A pool argument that must hold one int (an int or a one-element list)."""
    vals = C.int_list(v, fn, name, pos)
    if len(vals) != 1 and not (allow_empty and not vals):
        raise RuntimeError(f"{fn}() argument '{name}' should contain one int (got {len(vals)})")
    return vals


def _dim_range(fn, t, lo, hi):
    nd = t._data.ndim
    if not lo <= nd <= hi:
        raise RuntimeError(f"Expected {lo} to {hi} dimensions, but got {nd}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {fn})")


def _max_pool1d_checks(input, k, s, p, d, ceil_mode):
    shape = input._data.shape
    if not ((len(shape) == 2 and 0 not in shape) or (len(shape) == 3 and 0 not in shape[1:])):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{list(shape)}")
    for name, v, what in (("kernel_size", k, "an int, list of ints or tuple of ints of size 1"),
                          ("stride", s,
                           "None, an int, list of ints, or tuple of ints of size 1"),
                          ("padding", p, "an int, list of ints, or tuple of ints of size 1"),
                          ("dilation", d, "an int, list of ints or tuple of ints of size 1")):
        if len(v) != 1 and not (name == "stride" and not v):
            raise RuntimeError(f"max_pool1d() {name} must be {what} but got size {len(v)}")
    k, p, d = k[0], p[0], d[0]
    s = s[0] if s else k
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    o = F._pool_size(shape[-1], k, s, p, d, ceil_mode)
    if o <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {o}")
    return k, s, p, d


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, L) or (C, L): max_pool2d on a unit height."""
    C.tensor_arg("max_pool1d", "input", 1, input)
    k = C.int_list(kernel_size, "max_pool1d", "kernel_size", 2)
    s = () if stride is None else C.int_list(stride, "max_pool1d", "stride", 3)
    p = C.int_list(padding, "max_pool1d", "padding", 4)
    d = C.int_list(dilation, "max_pool1d", "dilation", 5)
    ceil_mode = C.bool_arg(ceil_mode, "max_pool1d", "ceil_mode", 6)
    k, s, p, d = _max_pool1d_checks(input, k, s, p, d, ceil_mode)
    res = F.max_pool2d(sh.unsqueeze(input, -2), (1, k), (1, s), (0, p), (1, d), ceil_mode,
                       True)
    out, idx = sh.squeeze(res[0], -2), sh.squeeze(res[1], -2)
    return (out, idx) if return_indices else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Window means over (N, C, L) or (C, L): avg_pool2d on a unit height."""
    C.tensor_arg("avg_pool1d", "input", 1, input)
    _dim_range("avg_pool1d", input, 2, 3)
    k = _one_int("avg_pool1d", "kernel_size", kernel_size, 2)[0]
    s = _one_int("avg_pool1d", "stride", () if stride is None else stride, 3, True)
    p = _one_int("avg_pool1d", "padding", padding, 4)[0]
    s = s[0] if s else k
    out = F.avg_pool2d(sh.unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode,
                       count_include_pad)
    return sh.squeeze(out, -2)


def adaptive_avg_pool1d(input, output_size):
    """Means over PyTorch's adaptive windows along the last dim."""
    C.tensor_arg("adaptive_avg_pool1d", "input", 1, input)
    _dim_range("adaptive_avg_pool1d", input, 2, 3)
    o = _one_int("adaptive_avg_pool1d", "output_size", output_size, 2)[0]
    return sh.squeeze(F.adaptive_avg_pool2d(sh.unsqueeze(input, -2), (1, o)), -2)


# ========================================================================================
# adaptive max pooling
# ========================================================================================


def _windows(size, out):
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive_max(x, oh, ow):
    """Per-window maxima (values and flat h*w indices) of (N, C, H, W) x."""
    h, w = x._data.shape[-2:]
    if h % oh == 0 and w % ow == 0:  # equal windows: the max-pool kernel
        return F.max_pool2d(x, (h // oh, w // ow), return_indices=True)
    vals, idxs = [], []
    for a, b in _windows(h, oh):
        for c, d in _windows(w, ow):
            win = sh.flatten(x[:, :, a:b, c:d], 2)
            v, li = win.max(dim=-1)
            vals.append(v)
            width = d - c
            idxs.append((li // width + a) * w + (li % width + c))
    shape = x._data.shape[:2] + (oh, ow)
    return sh.reshape(sh.stack(vals, -1), shape), sh.reshape(sh.stack(idxs, -1), shape)


def adaptive_max_pool2d(input, output_size, return_indices=False, _fn="adaptive_max_pool2d",
                        _shown=None):
    """Maxima over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) input; an output
    size of 0 gives an empty result (``_fn``/``_shown``: the 1-D caller's name and shape)."""
    C.tensor_arg("adaptive_max_pool2d", "input", 1, input)
    size = F._adaptive_size("adaptive_max_pool2d", input, output_size, 2)
    shape = input._data.shape
    if len(shape) not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: "
                           f"{list(shape)}")
    if len(size) != 2:
        raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    shown = list(shape) if _shown is None else list(_shown)
    for i in range(1, len(shown)):
        if shown[i] <= 0:
            raise RuntimeError(f"{_fn}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {shown} with dimension {i} "
                               "being empty")
    oh, ow = size
    if oh < 0 or ow < 0:
        out_shape = list(shape[:-2]) + [oh, ow]
        neg = next(v for v in out_shape if v < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {out_shape}")
    C.require_float(input, "adaptive_max_pool2d")
    unbatched = len(shape) == 3
    x = sh.unsqueeze(input, 0) if unbatched else input
    out_shape = x._data.shape[:2] + (oh, ow)
    if 0 in out_shape:  # nothing to pool: an empty slice of x
        out = sh.reshape(x[:, :, :0, :0], out_shape)
        idx = _wrap(A.zeros(x._data, out_shape, np.int64))
    else:
        out, idx = _adaptive_max(x, oh, ow)
    if unbatched:
        out, idx = sh.squeeze(out, 0), sh.squeeze(idx, 0)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maxima over PyTorch's adaptive windows along the last dim."""
    C.tensor_arg("adaptive_max_pool1d", "input", 1, input)
    _dim_range("adaptive_max_pool1d", input, 2, 3)
    o = _one_int("adaptive_max_pool1d", "output_size", output_size, 2)[0]
    out, idx = adaptive_max_pool2d(sh.unsqueeze(input, -2), (1, o), True,
                                   "adaptive_max_pool1d", input._data.shape)
    out, idx = sh.squeeze(out, -2), sh.squeeze(idx, -2)
    return (out, idx) if return_indices else out


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
    dims = tuple(range(-len(ns), 0))
    # PyTorch's composite: its add(Tensor, Scalar) records AddBackward1
    rstd = ew.add.scalar(input.pow(2).mean(dims, keepdim=True), eps).rsqrt()
    out = input * rstd
    return out * weight if weight is not None else out


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
    n = len(b)
    x = sh.reshape(input, (*b, c // (r * r), r, r, h, w))
    x = sh.permute(x, (*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return sh.reshape(x, (*b, c // (r * r), h * r, w * r))


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
    n = len(b)
    x = sh.reshape(input, (*b, c, h // r, r, w // r, r))
    x = sh.permute(x, (*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return sh.reshape(x, (*b, c * r * r, h // r, w // r))



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
    n, c, *rest = input._data.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    x = sh.reshape(input, (n, groups, c // groups, *rest))
    return sh.reshape(sh.transpose(x, 1, 2), (n, c, *rest))


# ========================================================================================
# channel dropout and the bilinear form
# ========================================================================================


def _feature_dropout(input, p, training, inplace):
    """Zero whole channels of (N, C, *) input with probability p, scaling by 1/(1-p)."""
    if not training or p == 0 or input.numel() == 0:
        return input
    from numgrad.random import default_generator
    shape = tuple(input._data.shape[:2]) + (1,) * (input.dim() - 2)
    if p == 1:
        mask = _zeros(shape, input)
    else:
        # drawn by the host generator in PyTorch's order: the same masks for one seed
        mask = default_generator.bernoulli(shape, 1.0 - p, input._data.dtype)
        mask = F._wrap(A.to_device(mask, input.device)) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def _zeros(shape, like):
    return F._wrap(A.zeros(like._data, shape, like._data.dtype))


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
        out = _feature_dropout(x, p, training, inplace)
        return out.squeeze_(0) if inplace else sh.squeeze(out, 0)
    return _feature_dropout(input, p, training, inplace)


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
    return _feature_dropout(input, p, training, inplace)


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
    o, i, j = w
    x1 = sh.reshape(input1, (-1, i))
    x2 = sh.reshape(input2, (-1, 1, j))
    wm = sh.reshape(sh.permute(weight, (1, 0, 2)), (i, o * j))
    y = (sh.reshape(la.matmul(x1, wm), (-1, o, j)) * x2).sum(-1)
    y = sh.reshape(y, (*s1[:-1], o))
    return y + bias if bias is not None else y


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
        from numgrad.nn._embedding_bag import embedding_bag_op
        return embedding_bag_op(flat, weight, bags, mode, per_sample_weights, padding_idx)
    if padding_idx is not None:
        raise NotImplementedError("embedding_bag: padding_idx is supported by numgrad for "
                                  "float32 and float64 weights")
    emb = F.embedding(flat, weight)
    if per_sample_weights is not None:
        emb = emb * sh.reshape(per_sample_weights, (-1, 1))
    dim = weight._data.shape[1]
    if input.dim() == 2 and bags and bags[0][1] > 0:
        e3 = sh.reshape(emb, (len(bags), -1, dim))
        return e3.max(dim=1)[0] if mode == "max" else (e3.mean(1) if mode == "mean" else
                                                       e3.sum(1))
    out = []
    for a, b in bags:
        if b <= a:
            out.append(_zeros((dim,), weight))
            continue
        part = emb[a:b]
        if mode == "max":
            out.append(part.max(dim=0)[0])
        elif mode == "sum":
            out.append(part.sum(0))
        else:
            out.append(part.mean(0))
    return sh.stack(out, 0) if out else _zeros((0, dim), weight)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements go to SELU's
    negative saturation -alpha', then an affine map a x + b restores the statistics."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        zero = _zeros((), input)
        return input.mul_(zero) if inplace else input * zero
    from numgrad.random import default_generator
    keep = default_generator.bernoulli(tuple(input._data.shape), 1.0 - p, input._data.dtype)
    keep = F._wrap(A.to_device(keep, input.device))
    sat = 1.7580993408473766  # SELU's scale * alpha: the value of a saturated unit (negated)
    a = 1.0 / np.sqrt((sat * sat * p + 1) * (1 - p))
    b = (keep - 1) * (sat * a) + sat * a * p
    scaled = input.mul_(keep * a) if inplace else input * (keep * a)
    return scaled.add_(b) if inplace else scaled + b
