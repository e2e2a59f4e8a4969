"""``numgrad.nn.functional``: the layers and losses as functions, with PyTorch's node names.

Forward passes run Numba kernels (convolutions as BLAS products over im2col columns).
Backward rules run kernels too; when a graph is being recorded for higher-order gradients
(``create_graph=True``), the same rules are written with differentiable numgrad ops.
"""

import math
import warnings

import numpy as np

from numgrad import _arrays as A
from numgrad import _dtype, _intercept
from numgrad._compile import tape as _tape
from numgrad._shape import Size, broadcast_shapes
from numgrad.nn import _checks as C
from numgrad.ops import batch_norm as batch_norm_op
from numgrad.ops import elementwise as ew
from numgrad.ops import embedding as embedding_op
from numgrad.ops import gelu as gelu_op
from numgrad.ops import indexing as ix
from numgrad.ops import linalg as la
from numgrad.ops import nn_losses, norms
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import (
    EW,
    IDX,
    LazyKernels,
    _wrap,
    dtype_of,
    state,
)
from numgrad.ops.fused import addmm  # noqa: F401  (linear's op; nn.RNN cells call it)

NN = LazyKernels("nn")
LIN = LazyKernels("linalg")

# activations that exist as tensor ops
tanh = un.tanh
sigmoid = un.sigmoid


def _softmax_dim(name, ndim, stacklevel):
    """PyTorch's implicit dim for softmax without ``dim`` (deprecated, with its warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum exp(x) along ``dim`` (``SoftmaxBackward0``)."""
    if dim is None:
        C.tensor_arg("softmax", "input", 1, input)
        dim = _softmax_dim("softmax", input._data.ndim, _stacklevel)
    return red.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim`` (``LogSoftmaxBackward0``)."""
    if dim is None:
        C.tensor_arg("log_softmax", "input", 1, input)
        dim = _softmax_dim("log_softmax", input._data.ndim, _stacklevel)
    return red.log_softmax(input, dim, dtype)


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
    C.inplace_shape(out._data.shape, bshape)  # PyTorch adds the bias in place
    return ew.add(out, bias)


def _unwatched():
    """Whether no compile trace, profiler, exporter or forward-AD level watches the ops: a
    result nothing records may then skip the ops around its kernel."""
    return _tape.TAPE is None and not _intercept._CLIENTS


def _linear_no_graph(input, weight, bias):
    """``linear``'s result where nothing records it (no input requires grad or grad mode is
    off, ``_unwatched``), for host arrays that the linear kernel takes (the kernel ``addmm``
    and ``matmul`` call, so the same values), without the reshape, transpose, ``addmm``
    (``matmul``) and view ops around it: a new (m, n) tensor, viewed in the input's leading
    dims when it has more than two and a bias (a view, as PyTorch's; without a bias,
    PyTorch's fold leaves no view). None: the ops path. (Token-by-token generation calls
    linear 17 times a token: about 7 us saved on each.)"""
    if state.enabled and (input._requires_grad or weight._requires_grad
                          or (bias is not None and bias._requires_grad)):
        return None
    if not _unwatched():
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


# ========================================================================================
# dropout
# ========================================================================================


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale by 1/(1-p) (``MulBackward0``)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
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


# ========================================================================================
# normalization
# ========================================================================================


def _channel_view(t, ndim):
    return sh.reshape(t, (1, -1) + (1,) * (ndim - 2))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Batch normalization over (N, C, ...) per channel (``NativeBatchNormBackward0``)."""
    C.tensor_arg("batch_norm", "input", 1, input)
    x = input._data
    momentum = C.float_arg(momentum, "batch_norm", "momentum", 7)  # checked in eval mode too
    if training:
        if x.ndim and x.shape[0] * math.prod(x.shape[2:]) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {Size(x.shape)}")
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
        if x.ndim < 2 and all(t is None or t._data.size == 0
                              for t in (running_mean, running_var, weight, bias)):
            raise C.dim_error(1, x.ndim)  # (a non-empty stat is named first, below)
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
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
    C.norm_dtypes(input, "batch_norm", (weight, bias, running_mean, running_var))
    for t in (running_mean, running_var):
        if t is not None and t._data.ndim != 1:
            raise RuntimeError(f"TensorAccessor expected 1 dims but tensor has {t._data.ndim}")
    if training and x.size // c <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {Size(x.shape)}")
    return batch_norm_op.native_batch_norm(input, weight, bias, running_mean, running_var,
                                           training, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalize over the trailing ``normalized_shape`` dims (``NativeLayerNormBackward0``)."""
    C.tensor_arg("layer_norm", "input", 1, input)
    if not (normalized_shape.__class__ is tuple and len(normalized_shape) == 1
            and normalized_shape[0].__class__ is int):  # (a LayerNorm's own: taken as is)
        normalized_shape = C.int_list(normalized_shape, "layer_norm", "normalized_shape", 2)
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
    C.norm_dtypes(input, "LayerNormKernelImpl", (weight, bias))
    if x.size == 0:
        return sh.clone(input)
    return norms.native_layer_norm(input, weight, bias, normalized_shape, eps)


# ========================================================================================
# embedding and GELU
# ========================================================================================


def _embedding_renorm(weight, flat, max_norm, norm_type):
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


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at integer ``input`` (``EmbeddingBackward0``). ``sparse=True``
    gives the same gradient values as a dense tensor."""
    C.tensors("embedding", "input weight", input, weight)
    if padding_idx is not None:
        n_rows = weight.size(0)
        if (padding_idx > 0 and padding_idx >= n_rows) or (
                padding_idx < 0 and padding_idx < -n_rows):
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = C.int_arg(padding_idx, "embedding", "padding_idx", 3)
        if padding_idx < 0:
            padding_idx += n_rows
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
    if flat.size and (NN.on(flat).first_outside(flat, 0, n - 1) >= 0):
        if not weight._data.shape[1]:  # PyTorch's path for empty rows words it so
            bad = int(A.host(flat)[NN.on(flat).first_outside(flat, 0, n - 1)])
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={n}")
        raise IndexError("index out of range in self")
    if max_norm is None and not (state.enabled and weight._requires_grad) and _unwatched():
        w = weight._data
        if flat.__class__ is np.ndarray and w.__class__ is np.ndarray and w.flags.c_contiguous:
            # nothing records it: the rows gathered by the gather plan's kernel, without the
            # plan (its scatter side is the backward's)
            out = np.empty((1, flat.size, w.shape[1]), w.dtype)
            if out.size:
                IDX.gather_axis(w.reshape(1, n, w.shape[1]), flat, out)
            return _wrap(out.reshape(idx.shape + (w.shape[1],)))
    if max_norm is not None:
        _embedding_renorm(weight, A.host(flat), max_norm, norm_type)
    plan = ix._plan(weight._data.shape, [(0, A.host(idx))])  # built on the host
    freq = None
    if scale_grad_by_freq and state.enabled and weight._requires_grad:
        host = A.host(flat)
        freq = (1.0 / np.bincount(host, minlength=n)[host]).reshape(idx.shape + (1,))
    return embedding_op.embedding(weight, input, padding_idx, plan, freq)


def relu(input, inplace=False):
    """max(x, 0) (``ReluBackward0``); in place with ``inplace=True``."""
    return input.relu_() if inplace else ew.relu(input)


def _inplace_result(input, out, inplace):
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    """x Phi(x) (``GeluBackward0``); ``approximate='tanh'`` uses the tanh formula."""
    C.tensor_arg("gelu", "input", 1, input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    C.require_float(input, "GeluKernelImpl")
    return gelu_op.gelu(input, approximate)


def silu(input, inplace=False):
    C.tensor_arg("silu", "input", 1, input)
    C.require_float(input, "silu_cpu")
    return _inplace_result(input, ew.mul(input, un.sigmoid(input)), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    C.numbers("leaky_relu", input, negative_slope=negative_slope)
    C.require_float(input, "leaky_relu_cpu")
    from numgrad.ops import activation as act  # LeakyReluBackward0/1, as PyTorch
    from numgrad.ops.inplace import apply_
    if inplace:
        return apply_(input, lambda x: act.leaky_relu_result(x, negative_slope))
    return act.leaky_relu(input, negative_slope)


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



def _pointwise_loss_args(fn, input, target, size_average, reduce, reduction):
    """What mse/l1/smooth_l1 check before computing: tensors, the size warning, the reduction
    and the broadcast shape (PyTorch's broadcast_tensors error)."""
    C.tensors(fn, "input target", input, target)
    C.check_same_size(input, target)
    reduction = C.reduction(reduction, size_average, reduce)
    return reduction, broadcast_shapes(input._data.shape, target._data.shape)


def _weighted_loss(el, weight, input, reduction):
    """mse/l1 with ``weight``: PyTorch's manual weighted reduction."""
    C.tensor_arg("mse_loss", "weight", 3, weight)
    if weight._data.shape != input._data.shape:
        raise ValueError("Weights and input must have the same size.")
    el = ew.mul(el, weight)
    if reduction == "none":
        return el
    if reduction == "sum":
        return red.sum(el)
    return ew.div(red.sum(el), red.sum(weight))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (``MseLossBackward0``)."""
    reduction, shape = _pointwise_loss_args("mse_loss", input, target, size_average, reduce,
                                            reduction)
    if weight is not None:
        return _weighted_loss(ew.pow(ew.sub(input, target), 2), weight, input, reduction)
    dt = _dtype.result_type(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"mse_cpu\" not implemented for '{dt._legacy}'")
    return nn_losses.mse_loss(input, target, reduction, shape, dt)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction, _ = _pointwise_loss_args("l1_loss", input, target, size_average, reduce,
                                        reduction)
    el = ew.abs(ew.sub(input, target))
    if weight is not None:
        return _weighted_loss(el, weight, input, reduction)
    return C.reduce(el, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction, _ = _pointwise_loss_args("smooth_l1_loss", input, target, size_average, reduce,
                                        reduction)
    if beta == 0.0:
        return C.reduce(ew.abs(ew.sub(input, target)), reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    dt = _dtype.result_type(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"smooth_l1_cpu\" not implemented for '{dt._legacy}'")
    d = ew.abs(ew.sub(input, target))
    loss = ew.where(ew.lt(d, beta), ew.div(ew.mul(ew.mul(d, d), 0.5), beta), ew.sub(d, 0.5 * beta))
    return C.reduce(loss, reduction)


def _nll_checks(input, target, weight):
    """PyTorch's nll_loss_nd/nll_loss/nll_loss2d checks, in its order."""
    xs, ts = input._data.shape, target._data.shape
    xd = len(xs)
    if xd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {xd})")
    if xd != 1 and xs[0] != (ts[0] if ts else 0):
        raise ValueError(f"Expected input batch_size ({xs[0]}) to match target batch_size "
                         f"({ts[0] if ts else 0}).")
    if xd <= 2:
        if len(ts) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if xd == 1 and len(ts) == 1 and ts[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{ts[0]}")
        c = xs[-1]
        if weight is not None and (weight._data.ndim != 1 or weight._data.size != c):
            raise RuntimeError(
                f"weight tensor should be defined either for all {c} classes or no classes but "
                f"got weight tensor of shape: {list(weight._data.shape)}")
        kernel = "nll_loss_out_frame"
    else:
        if xd != 4 and ts[1:] != xs[2:]:
            raise RuntimeError(f"Expected target size {[xs[0], *xs[2:]]}, got {list(ts)}")
        if xd == 4 and len(ts) != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {len(ts)}")
        if weight is not None and weight._data.size != xs[1]:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
        if xd == 4 and (xs[0],) + xs[2:] != ts:
            raise RuntimeError(f"size mismatch (got input: {list(xs)} , target: {list(ts)}")
        kernel = "nll_loss2d_forward_out_frame"
    if target._data.dtype not in (np.int64, np.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{dtype_of(target)._legacy}")
    C.require_float(input, kernel)
    if weight is not None and weight._data.dtype != input._data.dtype:
        raise RuntimeError(f"expected scalar type {dtype_of(input)._legacy} but found "
                           f"{dtype_of(weight)._legacy}")



def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of class indices (``NllLossBackward0``)."""
    C.tensors("nll_loss_nd", "input target weight", input, target, weight)
    reduction = C.reduction(reduction, size_average, reduce)
    ignore_index = C.int_arg(ignore_index, "nll_loss_nd", "ignore_index", 5)
    _nll_checks(input, target, weight)
    C.not_differentiable("nll_loss_forward", weight=weight)
    return _nll(input, target, weight, ignore_index, reduction)


def _nll(input, target, weight, ignore_index, reduction):
    """PyTorch's nll_loss_nd: (C,) and (N, C) inputs to nll_loss_forward, (N, C, H, W) ones to
    nll_loss2d_forward, other ranks viewed as (N, C, 1, -1) for it (the loss viewed back)."""
    nd = input._data.ndim
    if nd <= 2:
        return nn_losses.nll_loss_forward(input, target, weight, reduction, ignore_index)
    if nd == 4:
        return nn_losses.nll_loss2d_forward(input, target, weight, reduction, ignore_index)
    xs = input._data.shape
    n, c = xs[:2]
    x4 = sh.reshape(sh.contiguous(input), (n, c, 1, -1) if input._data.size else (n, c, 0, 0))
    t3 = A.reshape(target._data, (n, 1, -1) if target._data.size else (n, 0, 0))
    if x4._data.shape[2:] != t3.shape[1:]:  # C == 0 with targets
        raise RuntimeError(f"size mismatch (got input: {list(x4._data.shape)} , target: "
                           f"{list(t3.shape)}")
    out = nn_losses.nll_loss2d_forward(x4, t3, weight, reduction, ignore_index)
    return sh.reshape(out, (n,) + tuple(xs[2:])) if reduction == "none" else out


def _log_softmax_checked(input, class_dim):
    C.require_float(input, "log_softmax_lastdim_kernel_impl" if class_dim == input._data.ndim - 1
                   else "log_softmax_kernel_impl")
    return red.log_softmax(input, class_dim)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax + nll_loss for class indices; probabilities as targets also work."""
    fn = "cross_entropy_loss"
    C.tensors(fn, "input target weight", input, target, weight)
    reduction = C.reduction(reduction, size_average, reduce)
    ignore_index = C.int_arg(ignore_index, fn, "ignore_index", 5)
    label_smoothing = C.float_arg(label_smoothing, fn, "label_smoothing", 6)
    nd = input._data.ndim
    class_dim = 0 if nd == 1 else 1
    smoothing_error = RuntimeError(
        f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
    if input._data.shape == target._data.shape:  # class probabilities as targets
        if not dtype_of(target).is_floating_point:
            raise RuntimeError("Expected floating point type for target with class "
                               f"probabilities, got {dtype_of(target)._legacy}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if nd == 0:
            raise C.dim_error(1, 0)
        c = input._data.shape[class_dim]
        if weight is not None and (weight._data.ndim != 1 or weight._data.size != c):
            raise RuntimeError(
                f"cross_entropy: weight tensor should be defined either for all {c} classes or no "
                f"classes but got weight tensor of shape: {list(weight._data.shape)}")
        if label_smoothing > 1.0:
            raise smoothing_error
        logp = _log_softmax_checked(input, class_dim)
        tgt = target
        if label_smoothing > 0:
            tgt = ew.add(ew.mul(target, 1 - label_smoothing), label_smoothing / c)
        prod = ew.mul(logp, tgt)
        if weight is not None:
            prod = ew.mul(prod, _channel_view(weight, nd) if nd > 1 else weight)
        loss = ew.neg(red.sum(prod, class_dim))
        if reduction == "mean":
            return ew.div(red.sum(loss), loss.numel() if nd > 1 else 1)
        return C.reduce(loss, reduction)
    if label_smoothing > 1.0:
        raise smoothing_error
    if nd == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    logp = _log_softmax_checked(input, class_dim)
    _nll_checks(logp, target, weight)
    C.not_differentiable("nll_loss_forward", weight=weight)
    nll = _nll(logp, target, weight, ignore_index, reduction)
    if label_smoothing <= 0:
        return nll
    c = input._data.shape[class_dim]
    ignore = ew.eq(target, ignore_index)
    if weight is not None:
        wv = _channel_view(weight, nd) if nd > 1 else weight
        smooth = ew.neg(red.sum(ew.mul(logp, wv), class_dim))
    else:
        smooth = ew.neg(red.sum(logp, class_dim))
    smooth = ew.where(ignore, 0.0, smooth)
    if reduction == "mean":
        kept = ew.logical_not(ignore)  # divided by tensors, as PyTorch: nothing read on the host
        if weight is not None:
            ret = ew.div(red.sum(smooth), red.sum(ix.getitem(weight, ix.getitem(target, kept))))
        else:
            ret = ew.div(red.sum(smooth), red.sum(kept))
    elif reduction == "sum":
        ret = red.sum(smooth)
    else:
        ret = smooth
    return ew.add(ew.mul(nll, 1 - label_smoothing), ew.mul(ret, label_smoothing / c))


def _broadcast_shapes_py(*shapes):
    """``torch.broadcast_shapes`` (a Python function in PyTorch, with its own message)."""
    common = [1] * max(len(sh_) for sh_ in shapes)
    for arg, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == common[i]:
                continue
            if common[i] == 1:
                common[i] = shape[i]
            if shape[i] != 1 and common[i] != shape[i]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {shape[i]} at {i}! "
                    f"Mismatching argument at index {arg} had {Size(shape)}; but expected shape "
                    f"should be broadcastable to {common}")
    return tuple(common)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), logs clamped at -100 (``BinaryCrossEntropyBackward0``)."""
    C.tensors("binary_cross_entropy", "input target weight", input, target, weight)
    C.not_differentiable("binary_cross_entropy", weight=weight)
    reduction = C.reduction(reduction, size_average, reduce)
    if input._data.shape != target._data.shape:
        raise ValueError(
            f"Using a target size ({Size(target._data.shape)}) that is different to the input "
            f"size ({Size(input._data.shape)}) is deprecated. Please ensure they have the same "
            "size.")
    w_shape = None
    if weight is not None:
        w_shape = _broadcast_shapes_py(target._data.shape, weight._data.shape)
    if target._data.dtype != input._data.dtype:
        raise RuntimeError(f"Found dtype {dtype_of(target)._legacy} but expected "
                           f"{dtype_of(input)._legacy}")
    C.require_float(input, "binary_cross_entropy")
    x = input._data
    if x.size and NN.on(x).first_outside(A.contiguous(x).reshape(-1), 0.0, 1.0) >= 0:
        raise RuntimeError("all elements of input should be between 0 and 1")
    if w_shape is not None:
        C.inplace_shape(x.shape, w_shape)
    return nn_losses.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """BCE on logits, stable for any logit (``BinaryCrossEntropyWithLogitsBackward0``); the
    loss has the target's (floating) dtype, as in PyTorch."""
    C.tensors("binary_cross_entropy_with_logits", "input target weight pos_weight", input,
              target, weight, pos_weight)
    C.not_differentiable("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    reduction = C.reduction(reduction, size_average, reduce)
    if input._data.shape != target._data.shape:
        raise ValueError(f"Target size ({Size(target._data.shape)}) must be the same as input "
                         f"size ({Size(input._data.shape)})")
    C.require_float(input, "log_sigmoid_cpu")
    x = input._data
    if pos_weight is not None:  # PyTorch: log_sigmoid(x).mul_((pos_weight - 1) * t + 1)
        C.inplace_shape(x.shape, broadcast_shapes(pos_weight._data.shape, target._data.shape))
    tdt = dtype_of(target)
    if tdt.np == np.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if not tdt.is_floating_point:
        raise RuntimeError(f"result type {dtype_of(input)._legacy} can't be cast to the desired "
                           f"output type {tdt._legacy}")
    if weight is not None:
        C.inplace_shape(x.shape, weight._data.shape)
    return nn_losses.binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                      reduction)


def one_hot(tensor, num_classes=-1):
    """Integer class indices as one-hot rows (int64)."""
    C.tensor_arg("one_hot", "self", 1, tensor)
    num_classes = C.int_arg(num_classes, "one_hot", "num_classes", 2)
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
    adaptive_max_pool2d, adaptive_max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d,
    lp_pool2d, lp_pool3d, max_pool1d, max_pool2d, max_pool3d, max_unpool1d, max_unpool2d,
    max_unpool3d)
from numgrad.nn._losses_more import (  # noqa: E402,F401,I001  (more losses and distances)
    cosine_embedding_loss, cosine_similarity, gaussian_nll_loss, hinge_embedding_loss,
    huber_loss, kl_div, margin_ranking_loss, multi_margin_loss, multilabel_margin_loss,
    multilabel_soft_margin_loss, pairwise_distance, pdist, poisson_nll_loss, soft_margin_loss,
    triplet_margin_loss, triplet_margin_with_distance_loss)
from numgrad.nn._functional_layers import (  # noqa: E402,F401,I001  (more norm/other layers)
    bilinear, channel_shuffle, dropout1d, dropout2d, embedding_bag, local_response_norm,
    pixel_shuffle, pixel_unshuffle, rms_norm, alpha_dropout)
from numgrad.nn._activations_more import (  # noqa: E402,F401,I001  (more activations)
    celu, celu_, elu, elu_, glu, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_,
    leaky_relu_, logsigmoid, mish, prelu, relu6, relu_, rrelu, rrelu_, selu, selu_, softmin,
    softshrink, softsign, tanhshrink, threshold_)
from numgrad.nn import _activations_more  # noqa: E402,I001

threshold = _activations_more.threshold  # (a name softplus's argument also has)
