"""Layers of ``numgrad.nn.functional`` below their argument parsing: linear (with its path for
results nothing records), batch and layer norm, embedding, dropout and one_hot with
PyTorch's checks, and those PyTorch writes as composites of ops (the nodes of the pieces
appear, as in PyTorch): RMS norm, prelu's weight
view, the bilinear form, pixel (un)shuffle and channel shuffle (a reshape/permute), channel
dropout and alpha dropout (masks drawn by the host generator in PyTorch's order, so one seed
gives PyTorch's masks on every device), and the embedding bags of weights the
``_embedding_bag`` op does not take (per-bag reductions of looked-up rows)."""

import math
import warnings

import numpy as np

from numgrad import _arrays as A
from numgrad import _hook, _intercept
from numgrad._shape import Size
from numgrad.ops import activation as act
from numgrad.ops import batch_norm as batch_norm_op
from numgrad.ops import elementwise as ew
from numgrad.ops import embedding as embedding_op
from numgrad.ops import embedding_bag as EBO
from numgrad.ops import group_norm as GN
from numgrad.ops import indexing as ix
from numgrad.ops import linalg as la
from numgrad.ops import named_composite, norms
from numgrad.ops import nn_checks as K
from numgrad.ops import nn_shuffle as shuffle
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import EW, IDX, LazyKernels, _wrap, dtype_of, state
from numgrad.ops.fused import addmm

NN = LazyKernels("nn")
LIN = LazyKernels("linalg")


def zeros(shape, like):
    return _wrap(A.zeros(like._data, shape, like._data.dtype))


def _mask(shape, keep, like):
    from numgrad.random import default_generator
    mask = default_generator.bernoulli(shape, keep, like._data.dtype)
    return _wrap(A.to_device(mask, like.device))


def rms_norm(input, ns, weight, eps):
    """x / sqrt(mean(x^2 over the trailing dims ``ns``) + eps) * weight, after PyTorch's
    checks; eps (None) defaults to the dtype's machine epsilon."""
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


def prelu(input, weight):
    """x where x > 0, else w x: one weight per channel (dim 1) or one for all, viewed to
    broadcast over ``input`` (``PreluKernelBackward0``), after PyTorch's checks."""
    if weight.dim() > 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    if input.dtype != weight.dtype:
        raise RuntimeError("prelu: Type promoting not supported. Got "
                           f"{input.dtype._legacy} and {weight.dtype._legacy}")
    n = weight.numel()
    if input.dim() == 0 and n != 1:
        raise RuntimeError("Not allow zero-dim input tensor.")
    channels = input.shape[1] if input.dim() > 1 else 1
    if n != 1 and n != channels:
        raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {n} and channel size = {channels}.")
    if input.dim() >= 2:
        weight = sh.reshape(weight, (weight.numel(),) + (1,) * (input.dim() - 2))
    elif weight.dim() != input.dim():
        weight = sh.reshape(weight, (1,) * input.dim())
    return act.prelu(input, weight)


def bilinear(input1, input2, weight, bias):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o] (two matrix products)."""
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
    o, i, j = weight._data.shape
    x1 = sh.reshape(input1, (-1, i))
    x2 = sh.reshape(input2, (-1, 1, j))
    wm = sh.reshape(sh.permute(weight, (1, 0, 2)), (i, o * j))
    y = (sh.reshape(la.matmul(x1, wm), (-1, o, j)) * x2).sum(-1)
    y = sh.reshape(y, (*input1._data.shape[:-1], o))
    return y + bias if bias is not None else y


def _shuffle_checks(fn, input, factor, name):
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {name}, but got {factor}")
    if input.dim() < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")


def pixel_shuffle(input, r):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    _shuffle_checks("pixel_shuffle", input, r, "upscale_factor")
    c = input._data.shape[-3]
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    return shuffle.pixel_shuffle(input, r)


def pixel_unshuffle(input, r):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    _shuffle_checks("pixel_unshuffle", input, r, "downscale_factor")
    h, w = input._data.shape[-2:]
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    return shuffle.pixel_unshuffle(input, r)


def channel_shuffle(input, groups):
    """(N, g*k, *) -> channels regrouped as (k, g)."""
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
    n, c, *rest = input._data.shape
    x = sh.reshape(input, (n, groups, c // groups, *rest))
    return sh.reshape(sh.transpose(x, 1, 2), (n, c, *rest))


def channel_rank(k, input):
    """dropout{k}d's checks of its input's rank: (N, C, L) or (C, L) input for k = 1; for
    k = 2 and 3 other ranks warn (3-D input to dropout2d is taken as (N, C, L), 4-D input to
    dropout3d as unbatched), as PyTorch does. Returns whether the input is unbatched."""
    nd = input.dim()
    if k == 1 and nd not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    if k > 1 and nd not in (k + 1, k + 2):
        warnings.warn(
            f"dropout{k}d: Received a {nd}-D input to dropout{k}d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            f"warning, please use dropout instead. Note that dropout{k}d exists to provide "
            f"channel-wise dropout on inputs with {k} spatial dimensions, a channel dimension, "
            f"and an optional batch dimension (i.e. {k + 1}D or {k + 2}D inputs).", stacklevel=3)
    if k == 2 and nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=3)
    return nd == 2 if k == 1 else (k == 3 and nd != 5)


def _feature_rank(input):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")


def feature_dropout(input, p, training, inplace, unbatched=False):
    """Zero whole channels of (N, C, *) input (``unbatched``: (C, *), seen as (1, C, *) in
    or out of place, as PyTorch) with probability p, scaling by 1/(1-p)."""
    if unbatched:
        if inplace:  # (SqueezeBackward4 over the op over UnsqueezeBackward1, as PyTorch)
            return feature_dropout(input.unsqueeze_(0), p, training, True).squeeze_(0)
        return sh.squeeze(feature_dropout(sh.unsqueeze(input, 0), p, training, False), 0)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p != 1:
        _feature_rank(input)
    # one draw per channel: (N, C, 1, ...)
    shape = tuple(input._data.shape[:2]) + (1,) * (input.dim() - 2)
    mask = zeros(shape, input) if p == 1 else _mask(shape, 1.0 - p, input) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def alpha_dropout(input, p, training, inplace, feature=False):
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements go to SELU's
    negative saturation -alpha', then an affine map a x + b restores the statistics
    (``feature``: whole channels of (N, C, *) input, one draw per channel)."""
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        zero = zeros((), input)
        return input.mul_(zero) if inplace else input * zero
    if feature:
        _feature_rank(input)
    shape = tuple(input._data.shape)
    if feature:
        shape = shape[:2] + (1,) * (len(shape) - 2)
    keep = _mask(shape, 1.0 - p, input)
    sat = 1.7580993408473766  # SELU's scale * alpha: the value of a saturated unit (negated)
    a = 1.0 / np.sqrt((sat * sat * p + 1) * (1 - p))
    b = (keep - 1) * (sat * a) + sat * a * p
    scaled = input.mul_(keep * a) if inplace else input * (keep * a)
    return scaled.add_(b) if inplace else scaled + b


def bag_reduce(emb, per_sample_weights, bags, mode, fixed, like):
    """Each bag's max, sum or mean of the rows ``emb`` (scaled by ``per_sample_weights``)
    looked up in ``like`` (an empty bag gives zeros); ``fixed``: bags of one length."""
    if per_sample_weights is not None:
        emb = emb * sh.reshape(per_sample_weights, (-1, 1))
    dim = like._data.shape[1]
    if fixed and bags and bags[0][1] > 0:
        e3 = sh.reshape(emb, (len(bags), -1, dim))
        return e3.max(dim=1)[0] if mode == "max" else (e3.mean(1) if mode == "mean" else
                                                       e3.sum(1))
    out = []
    for a, b in bags:
        if b <= a:
            out.append(zeros((dim,), like))
            continue
        part = emb[a:b]
        out.append(part.max(dim=0)[0] if mode == "max" else
                   part.sum(0) if mode == "sum" else part.mean(0))
    return sh.stack(out, 0) if out else zeros((0, dim), like)


# ---- the layers of ``numgrad.nn.functional`` below its argument parsing: PyTorch's checks in
# its order, then the ops (or PyTorch's composites of ops) --------------------------------


def unwatched():
    """Whether no compile trace, profiler, exporter or forward-AD level watches the ops: a
    result nothing records may then skip the ops around its kernel."""
    return _hook.TAPE is None and not _intercept._CLIENTS


def _linear_no_graph(input, weight, bias):
    """``linear``'s result where nothing records it (no input requires grad or grad mode is
    off, ``unwatched``), for host arrays that the linear kernel takes (the kernel ``addmm``
    and ``matmul`` call, so the same values), without the reshape, transpose, ``addmm``
    (``matmul``) and view ops around it: a new (m, n) tensor, viewed in the input's leading
    dims when it has more than two and a bias (a view, as PyTorch's; without a bias,
    PyTorch's fold leaves no view). None: the ops path. (Token-by-token generation calls
    linear 17 times a token: about 7 us saved on each.)"""
    if state.enabled and (input._requires_grad or weight._requires_grad
                          or (bias is not None and bias._requires_grad)):
        return None
    if not unwatched():
        return None
    x, w, b = input._data, weight._data, None if bias is None else bias._data
    if x.__class__ is not np.ndarray or x.ndim < 2 or w.ndim != 2 or not x.flags.c_contiguous \
            or (b is not None and b.ndim != 1):
        return None
    x2 = x.reshape(-1, x.shape[-1])
    out = np.empty((x2.shape[0], w.shape[0]), x.dtype)
    wt = w.T
    if not LIN.linear_fits(x2, wt, b, out):
        return None
    LIN.linear(x2, wt, b, out)
    if x.ndim == 2:
        return _wrap(out)
    shape = x.shape[:-1] + (out.shape[1],)
    if b is None:
        return _wrap(out.reshape(shape))
    return sh.view_of(_wrap(out), out.reshape(shape))


def linear(input, weight, bias):
    """input @ weight^T + bias of checked tensors (``AddmmBackward0`` for 2-D input)."""
    xd = input._data.ndim
    out = _linear_no_graph(input, weight, bias)
    if out is not None:
        return out
    if bias is None:
        return la.matmul(input, sh.t(weight))
    if xd == 2:
        return addmm(bias, input, sh.t(weight))
    bshape = bias._data.shape
    if bshape and bias._data.size == bshape[-1] and input._data.flags.c_contiguous:
        # PyTorch folds the leading dims into one addmm and views the result back
        lead = input._data.shape[:-1]
        out = addmm(bias, sh.reshape(input, (-1, input._data.shape[-1])), sh.t(weight))
        return sh.view(out, lead + (out._data.shape[-1],))
    out = la.matmul(input, sh.t(weight))
    K.inplace_shape(out._data.shape, bshape)  # PyTorch adds the bias in place
    return ew.add(out, bias)


def batch_norm_python(input, training, eps):
    """F.batch_norm's own checks before its arguments are parsed: one value per channel
    (of ``input.size()``) when training, and eps."""
    if training:
        size = input.size()
        if size[0] * math.prod(size[2:]) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {size}")
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")


def batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    """Batch normalization of parsed arguments (F.batch_norm's order): PyTorch's checks, then
    the op (``NativeBatchNormBackward0``)."""
    x = input._data
    if training and x.ndim < 2 and all(t is None or t._data.size == 0
                                       for t in (running_mean, running_var, weight, bias)):
        raise K.dim_error(1, x.ndim)  # (a non-empty stat is named first, below)
    if x.size == 0:
        return sh.clone(input)
    c = x.shape[1] if x.ndim > 1 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is None:
            if not training and name.startswith("running"):
                raise RuntimeError(f"{name} must be defined in evaluation mode")
        elif t._data.size != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t._data.size}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be "
                         "None")
    K.norm_dtypes(input, "batch_norm", (weight, bias, running_mean, running_var))
    for t in (running_mean, running_var):
        if t is not None and t._data.ndim != 1:
            raise RuntimeError(f"TensorAccessor expected 1 dims but tensor has {t._data.ndim}")
    if training and x.size // c <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {Size(x.shape)}")
    return batch_norm_op.native_batch_norm(input, weight, bias, running_mean, running_var,
                                           training, momentum, eps)


def layer_norm(input, normalized_shape, weight, bias, eps):
    """Layer normalization over a parsed ``normalized_shape``: PyTorch's checks, then the op
    (``NativeLayerNormBackward0``)."""
    ns = list(normalized_shape)
    if not ns:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           f"containing at least one element, but got normalized_shape = {ns}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.shape != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t._data.shape)} and normalized_shape = {ns}")
    x = input._data
    if x.ndim < len(ns) or x.shape[x.ndim - len(ns):] != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={ns}, expected input with shape "
            f"[*, {', '.join(map(str, ns))}], but got input of size{list(x.shape)}")
    K.norm_dtypes(input, "LayerNormKernelImpl", (weight, bias))
    if x.size == 0:  # PyTorch's node over all three inputs; the parameters' gradients are 0
        return named_composite.record("NativeLayerNormBackward0", _empty_layer_norm,
                                      (input, weight, bias), (input, weight, bias),
                                      ("input", "weight", "bias"))
    return norms.native_layer_norm(input, weight, bias, normalized_shape, eps)


def _empty_layer_norm(x, weight, bias):
    """Layer norm of an empty input: an empty copy, joined to the parameters by the affine
    map so their gradients are sums over no rows."""
    y = sh.clone(x)
    if weight is not None:
        y = ew.mul(y, weight)
    if bias is not None:
        y = ew.add(y, bias)
    return y


def embedding_renorm(weight, flat, max_norm, norm_type):
    """PyTorch's embedding_renorm_: rows looked up whose norm exceeds max_norm are scaled
    in place to max_norm (a no_grad update of the weight)."""
    from numgrad.autograd.grad_mode import no_grad
    with no_grad():
        rows = _wrap(A.to_device(np.unique(flat), weight.device))
        sel = ix.index_select(weight, 0, rows)
        norms = red.norm(sel, float(norm_type), 1, keepdim=True)
        scale = ew.where(ew.gt(norms, float(max_norm)),
                         ew.mul(un.reciprocal(ew.add(norms, 1e-7)), float(max_norm)), 1.0)
        weight[rows] = ew.mul(sel, scale)


def check_padding_idx(padding_idx, n_rows):
    if (padding_idx > 0 and padding_idx >= n_rows) or (
            padding_idx < 0 and padding_idx < -n_rows):
        raise AssertionError("Padding_idx must be within num_embeddings")


def embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq):
    """Rows of ``weight`` at integer ``input`` after PyTorch's checks (``EmbeddingBackward0``)."""
    if weight._data.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    idx = input._data
    if idx.dtype not in (np.int64, np.int32):
        name = ("CUDABoolType" if input.is_cuda else "CPUBoolType") if idx.dtype == np.bool_ \
            else input.type()
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {name} instead (while checking arguments for embedding)")
    n = weight._data.shape[0]
    flat = A.astype(A.contiguous(idx).reshape(-1), np.int64)
    if flat.size and not n:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if flat.size and (NN.first_outside(flat, 0, n - 1) >= 0):
        if not weight._data.shape[1]:  # PyTorch's path for empty rows words it so
            bad = int(A.host(flat)[NN.first_outside(flat, 0, n - 1)])
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={n}")
        raise IndexError("index out of range in self")
    if max_norm is None and not (state.enabled and weight._requires_grad) and unwatched():
        w = weight._data
        if flat.__class__ is np.ndarray and w.__class__ is np.ndarray and w.flags.c_contiguous:
            # nothing records it: the rows gathered by the gather plan's kernel, without the
            # plan (its scatter side is the backward's)
            out = np.empty((1, flat.size, w.shape[1]), w.dtype)
            if out.size:
                IDX.gather_axis(w.reshape(1, n, w.shape[1]), flat, out)
            return _wrap(out.reshape(idx.shape + (w.shape[1],)))
    if max_norm is not None:
        embedding_renorm(weight, A.host(flat), max_norm, norm_type)
    plan = ix._plan(weight._data.shape, [(0, A.host(idx))])  # built on the host
    freq = None
    if scale_grad_by_freq and state.enabled and weight._requires_grad:
        host = A.host(flat)
        freq = (1.0 / np.bincount(host, minlength=n)[host]).reshape(idx.shape + (1,))
    return embedding_op.embedding(weight, input, padding_idx, plan, freq)


def dropout(input, p, training, inplace):
    """Each element zeroed with probability p and scaled by 1/(1-p) (``MulBackward0``), of
    parsed arguments."""
    if not training or p == 0:
        return input
    if p != 1 and not dtype_of(input).is_floating_point:  # the mask is float
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{dtype_of(input)._legacy}")
    from numgrad.random import default_generator
    if p == 1:
        mask = A.zeros(input._data, input._data.shape, input._data.dtype)
    else:
        # drawn by the (host) generator: the same masks on every device for one seed, in the
        # memory order of ``empty_like(input)`` as PyTorch draws them (a transposed input's
        # mask is drawn along its memory)
        from numgrad.ops.sampling import dense_order, laid_out
        a = input._data
        mask = default_generator.bernoulli(a.size, 1.0 - p, a.dtype)
        EW.unary(EW.mul_s, mask, mask.dtype, 1.0 / (1.0 - p), out=mask)
        perm = dense_order(a) if a.__class__ is np.ndarray else list(range(a.ndim))
        mask = A.to_device(laid_out(mask, a.shape, perm), input.device)
    if inplace:
        return input.mul_(_wrap(mask))
    return ew.mul(input, _wrap(mask))


def one_hot(tensor, num_classes):
    """Integer class indices as one-hot rows (int64) after PyTorch's checks."""
    if tensor._data.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    shape = tuple(tensor._data.shape)
    if not tensor._data.size:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _wrap(A.zeros(tensor._data, shape + (num_classes,), np.int64))
    if red.amin(tensor).item() < 0:
        raise RuntimeError("Class values must be non-negative.")
    top = int(red.amax(tensor).item())
    if num_classes == -1:
        num_classes = top + 1
    elif num_classes <= top:
        raise RuntimeError("Class values must be smaller than num_classes.")
    idx = sh.unsqueeze(tensor, -1)
    zeros = _wrap(A.zeros(tensor._data, shape + (num_classes,), np.int64))
    ones = _wrap(A.ones(tensor._data, idx._data.shape, np.int64))
    return ix.scatter_add(zeros, -1, idx, ones)



def _verify_group_size(size):
    """F.group_norm's check of its (N * C / G, G, *spatial) view: one value per group
    cannot be normalized."""
    count = size[0]
    for s in size[2:]:
        count *= s
    if count == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def group_norm_view(input, num_groups):
    """F.group_norm's own checks before its arguments are parsed: the rank, then its
    (N * C // G, G, *spatial) view (a bad ``num_groups`` fails in that Python division)."""
    nd = input.dim()
    if nd < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {nd}")
    n, c, *rest = input.shape
    _verify_group_size([n * c // num_groups, num_groups] + rest)


def group_norm(input, num_groups, weight, bias, eps):
    """Group normalization of parsed arguments (``group_norm_view`` checked first): PyTorch's
    checks in its order, then the op (``NativeGroupNormBackward0``)."""
    x = input._data
    c = x.shape[1]
    if num_groups <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {num_groups}")
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(x.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.size != c):
            # PyTorch's bias message shows the weight's shape ([0] without a weight)
            shown = t if name == "weight" else weight
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape "
                f"{list(shown._data.shape) if shown is not None else [0]} and input of shape "
                f"{list(x.shape)}")
    K.norm_dtypes(input, "GroupNormKernelImpl", (weight, bias))
    if x.size == 0:
        return sh.clone(input)
    return GN.native_group_norm(input, weight, bias, num_groups, float(eps))


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


def bag_mode_checks(mode, scale_grad_by_freq, sparse, per_sample_weights):
    """embedding_bag's checks of its mode against its other options (PyTorch's, then the
    options numgrad does not have)."""
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


def embedding_bag(input, weight, offsets, max_norm, norm_type, mode, per_sample_weights,
                  include_last_offset, padding_idx):
    """Sum, mean or max of each bag's embedding rows (empty bags give zeros) of parsed
    arguments, after PyTorch's checks: the declared ``_embedding_bag`` op
    (``EmbeddingBagBackward0``) for float weights, else per-bag reductions of looked-up rows."""
    rows = weight._data.shape[0]
    if padding_idx is not None:
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
    if not dtype_of(weight).is_floating_point:
        raise RuntimeError("Expected tensor for argument #1 'weight' to have one of the following "
                           f"scalar types: Half, BFloat16, Float, Double; but got {weight.type()} "
                           "instead (while checking arguments for embedding_bag)")
    if per_sample_weights is not None and per_sample_weights._data.dtype != weight._data.dtype:
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for "
            f"argument #1 'per_sample_weights'; but type {K.type_name(weight)} does not equal "
            f"{K.type_name(per_sample_weights)} (while checking arguments for embedding_bag)")
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= rows):
        raise RuntimeError("Expected i < index_size to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request "
                           "to PyTorch.)")
    if max_norm is not None:
        embedding_renorm(weight, A.host(A.contiguous(flat._data).reshape(-1)), max_norm,
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
    emb = embedding(flat, weight, None, None, 2.0, False)
    return bag_reduce(emb, per_sample_weights, bags, mode, input.dim() == 2, weight)


def local_response_norm(input, size, alpha, beta, k, nnf):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta, PyTorch's
    composite of ``nnf``'s (``numgrad.nn.functional``'s) pad and avg_pool2d."""
    nd = input.dim()
    if nd < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {nd} dimensions)")
    if input.numel() == 0:
        return input
    shape = input._data.shape
    sq = sh.reshape(input * input, (shape[0], 1, shape[1], -1))
    sq = nnf.pad(sq, (0, 0, size // 2, (size - 1) // 2))
    div = sh.reshape(nnf.avg_pool2d(sq, (size, 1), stride=1), shape)
    return input / (div * alpha + k).pow(beta)


def verify_spatial_size(size):
    """F.instance_norm's Python check (of ``input.size()``) when it uses the input's
    statistics."""
    if math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{size}")


def instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum,
                  eps):
    """Instance normalization of parsed arguments: batch norm (of parsed arguments) of the
    (1, N*C, ...) view (``numgrad.ops.group_norm.instance_norm``)."""
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    return GN.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                            momentum, eps, batch_norm)
