"""The losses of ``numgrad.nn.functional`` below its argument parsing. Declared ops:
``mse_loss`` (``MseLossBackward0``: the ``sqdiff`` kernel and a float64-accumulated sum),
``nll_loss_forward``/``nll_loss2d_forward`` and binary cross entropy (on probabilities and on
logits), each derivative written with numgrad ops so it is differentiable again. Then
PyTorch's checks of those losses and of ``numgrad.ops.losses``'s, in its order, before the
ops (or PyTorch's composites of ops: cross entropy, l1, smooth l1, weighted losses)."""

import warnings

import numpy as np

from numgrad import _arrays as A
from numgrad import _dtype
from numgrad._shape import Size, broadcast_shapes
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops import losses as L
from numgrad.ops import named_composite
from numgrad.ops import nn_checks as K
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import EW, RED, LazyKernels, _wrap, dtype_of, meta_for, state
from numgrad.ops.registry import op

NN = LazyKernels("nn")
_F = ("functional",)


# d/dx mean((x - t)^2) = 2 (x - t) g / n (2 (x - t) g for 'sum' and 'none'), d/dt = -that
def _mse_grads(grad, self, target, reduction, n, output_mask):
    x, t = self, target
    if t._data.dtype.kind == "b" or x._data.dtype.kind == "b":  # sub refuses bool
        x, t = (sh.to_dtype(v, grad.dtype) if v._data.dtype.kind == "b" else v for v in (x, t))
    d = ew.mul(ew.sub(x, t), (2.0 / n if n else 0.0) if reduction == "mean" else 2.0)
    gx = ew.mul(d, grad)
    return (gx if output_mask[0] else None, ew.neg(gx) if output_mask[1] else None)


@op(node="MseLossBackward0", inputs=("self", "target"), variants=("functional",),
    grads={("self", "target"): _mse_grads})
def mse_loss(input, target, reduction, shape, dt):
    """(input - target)^2 over the broadcast ``shape`` in float dtype ``dt``, reduced (the
    caller checks the arguments and gives the broadcast shape and result dtype)."""
    el = EW.binary(EW.sqdiff, A.astype(input._data, dt.np), A.astype(target._data, dt.np), dt.np,
                   shape)
    if reduction == "none":
        out = el
    else:
        scale = (1.0 / el.size if el.size else np.nan) if reduction == "mean" else 1.0
        out = RED.sum_all(el, dt.np, scale)
    values = {"reduction": reduction, "n": el.size}
    metas = (meta_for(input, shape, dt), meta_for(target, shape, dt))
    if metas != (None, None):
        values["_meta"] = metas
    return out, values


# ----------------------------------------------------------------------------------------
# negative log likelihood: nll_loss_forward (NllLossBackward0) for (C,) and (N, C) inputs,
# nll_loss2d_forward (NllLoss2DBackward0) for (N, C, H, W) ones, and their backward ops
# (linear in the output's gradient; the adjoint of the backward is the forward again)
# ----------------------------------------------------------------------------------------


def _class_rows(x):
    """The (rows, C) array of class scores: (C,) as one row, (N, C) as it is, (N, C, H, W)
    as its (N H W, C) transposed copy."""
    if x.ndim == 2:
        return A.contiguous(x)
    if x.ndim == 4:
        n, c, h, w = x.shape
        return A.contiguous(x.transpose(0, 2, 3, 1)).reshape((n * h * w, c))
    return A.contiguous(x).reshape((1, x.shape[0]))


def _target_rows(t):
    """The targets as one contiguous int64 line (Byte ones cast by a kernel, which a compiled
    step replays)."""
    t = A.contiguous(t) if t.dtype == np.int64 else EW.unary(EW.copy, t, np.int64)
    return t if t.ndim == 1 else t.reshape(-1)


def _nll(self, target, weight, reduction, ignore_index):
    x = self._data
    x2 = _class_rows(x)
    t = _target_rows(getattr(target, "_data", target))
    if x2.shape[0] != t.shape[0]:  # (the callers check; the kernel writes a loss per row)
        raise RuntimeError(f"size mismatch (got input: {list(x.shape)} , target: "
                           f"{list(getattr(target, 'shape', t.shape))}")
    c, dt = x2.shape[1], x.dtype
    w = weight._data.reshape(-1) if weight is not None else A.ones(x, c, dt)
    losses = A.empty(x, t.shape[0], dt)
    weights = A.empty(x, t.shape[0], dt)
    bad = NN.nll(x2, t, w, ignore_index, losses, weights) if t.size else -1
    if bad >= 0:
        raise IndexError(f"Target {A.host(t)[bad]} is out of bounds.")
    total = A.item(RED.sum_all(weights, dt, 1.0)) if reduction == "mean" else 1.0
    if reduction == "none":
        out = losses.reshape(x.shape[:1] + x.shape[2:] if x.ndim > 1 else ())
    else:
        out = RED.sum_all(losses, dt, (1.0 / total if total else np.nan)
                          if reduction == "mean" else 1.0)
    return out, {"target": t, "weight": weight, "total_weight": total, "reduction": reduction,
                 "ignore_index": ignore_index, "weights": weights}


def _nll_backward(grad_output, self, weights, target, total_weight, reduction):
    """One pass writing the sparse gradient (rows of ``self`` transposed back for 4-D)."""
    x = self._data
    out = A.empty(x, (target.shape[0], x.shape[1 if x.ndim > 1 else 0]), x.dtype)
    scale = (1.0 / total_weight if total_weight else np.nan) if reduction == "mean" else 1.0
    NN.nll_bwd(A.contiguous(grad_output._data).reshape(-1), target, weights, scale, out)
    if x.ndim == 4:
        n, c, h, w = x.shape
        return out.reshape((n, h, w, c)).transpose(0, 3, 1, 2)
    return out if x.ndim == 2 else out.reshape(x.shape)


_NLL_SAVED = ("self", "target", "weight", "total_weight", "reduction", "ignore_index",
              "weights")


def _zeros_like_self(grad, self):
    # the backward reads only self's shape: d/dself = 0
    return _wrap(A.zeros(self._data, self._data.shape, self._data.dtype))


# nll_loss_backward is linear in grad_output, and its adjoint is nll_loss itself:
# d/dg <a, nll_loss_backward(g)> = nll_loss(a)
def _nll_adjoint(grad, target, weight, reduction, ignore_index):
    fwd = nll_loss2d_forward if grad.dim() == 4 else nll_loss_forward
    return fwd(grad, target, weight, reduction, ignore_index)


@op(node="NllLossBackwardBackward0", inputs=("grad_output", "self"), variants=(),
    grads={"grad_output": _nll_adjoint, "self": _zeros_like_self})
def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                      total_weight, weights):
    """The input's gradient of nll_loss: -w[t] grad / total_weight at the target, 0 elsewhere
    (``weights``: the forward's per-sample w[t], 0 where ignored)."""
    return _nll_backward(grad_output, self, weights, target, total_weight, reduction), {
        "target": target, "weight": weight, "reduction": reduction,
        "ignore_index": ignore_index}


@op(node="NllLoss2DBackwardBackward0", inputs=("grad_output", "self"), variants=(),
    grads={"grad_output": _nll_adjoint, "self": _zeros_like_self})
def nll_loss2d_backward(grad_output, self, target, weight, reduction, ignore_index,
                        total_weight, weights):
    """nll_loss_backward for (N, C, H, W) inputs."""
    return _nll_backward(grad_output, self, weights, target, total_weight, reduction), {
        "target": target, "weight": weight, "reduction": reduction,
        "ignore_index": ignore_index}


# d/dx[n, c] nll = -w[t_n] g_n / total_weight where c = t_n (0 elsewhere and where ignored)
def _nll_grad(grad, self, target, weight, total_weight, reduction, ignore_index, weights):
    if not state.enabled:  # nothing to record: the op's kernel without its wrapper
        return _wrap(_nll_backward(grad, self, weights, target, total_weight, reduction))
    return nll_loss_backward(grad, self, target, weight, reduction, ignore_index,
                             total_weight, weights)


def _nll2d_grad(grad, self, target, weight, total_weight, reduction, ignore_index, weights):
    return nll_loss2d_backward(grad, self, target, weight, reduction, ignore_index,
                               total_weight, weights)


@op(node="NllLossBackward0", inputs=("self",), variants=_F, save=_NLL_SAVED,
    grads={"self": _nll_grad})
def nll_loss_forward(self, target, weight, reduction, ignore_index):
    """-w[t] x[t] per sample of a (C,) or (N, C) float input, reduced (the caller checks the
    shapes and dtypes; ``target`` a tensor or the saved int64 line)."""
    return _nll(self, target, weight, reduction, ignore_index)


@op(node="NllLoss2DBackward0", inputs=("self",), variants=_F, save=_NLL_SAVED,
    grads={"self": _nll2d_grad})
def nll_loss2d_forward(self, target, weight, reduction, ignore_index):
    """nll_loss_forward over the classes of an (N, C, H, W) input at each (n, h, w)."""
    return _nll(self, target, weight, reduction, ignore_index)


# ----------------------------------------------------------------------------------------
# binary cross entropy, on probabilities and on logits
# ----------------------------------------------------------------------------------------


def _reduced(el, reduction):
    if reduction == "none":
        return el
    return RED.sum_all(el, el.dtype, (1.0 / el.size if el.size else np.nan)
                       if reduction == "mean" else 1.0)


def _loss_scale(grad, weight, reduction, n):
    scale = ew.div(grad, n) if reduction == "mean" else grad
    return scale if weight is None else ew.mul(scale, weight)


# d/dx bce = (x - t) / max(x (1 - x), 1e-12) * w g / n; d/dt = (log(1 - x) - log x) w g / n
def _bce_grads(grad, self, target, weight, reduction, n, output_mask):
    x, t = self, target
    scale = _loss_scale(grad, weight, reduction, n)
    gx = gt = None
    if output_mask[0]:
        denom = ew.clamp_min(ew.mul(x, ew.rsub(x, 1.0)), 1e-12)
        gx = ew.mul(ew.div(ew.sub(x, t), denom), scale)
    if output_mask[1]:
        gt = ew.mul(ew.sub(un.log1p(ew.neg(x)), un.log(x)), scale)
    return gx, gt


@op(node="BinaryCrossEntropyBackward0", inputs=("self", "target"), variants=_F,
    save=("self", "target", "weight", "reduction", "n"),
    grads={("self", "target"): _bce_grads})
def binary_cross_entropy(self, target, weight, reduction):
    """-w (t log x + (1 - t) log(1 - x)), the logs clamped at -100, reduced (the caller checks
    the range, shapes and dtypes; ``weight`` broadcasts to the input)."""
    x = self._data
    el = EW.binary(EW.bce, x, target._data, x.dtype, x.shape)
    if weight is not None:
        el = EW.binary(EW.mul, el, A.astype(weight._data, x.dtype), x.dtype, x.shape)
    return _reduced(el, reduction), {"weight": weight, "reduction": reduction, "n": el.size}


# d/dx = lw sigmoid(x) - pw t, lw = (pw - 1) t + 1 (= sigmoid(x) - t without pw); the
# expanded (1 - t) + lw (sigmoid(x) - 1) cancels to noise at large negative x
# d/dt = (1 - pw) log_sigmoid(x) - x (= -x without pw), log_sigmoid(x) = -softplus(-x)
def _bce_logits_grads(grad, self, target, weight, pos_weight, reduction, n, output_mask):
    x, t, pw = self, target, pos_weight
    scale = _loss_scale(grad, weight, reduction, n)
    gx = gt = None
    if output_mask[0]:
        s = un.sigmoid(x)
        if pw is None:
            d = ew.sub(s, t)
        else:
            lw = ew.add(ew.mul(ew.sub(pw, 1.0), t), 1.0)
            d = ew.sub(ew.mul(lw, s), ew.mul(pw, t))
        gx = ew.mul(d, scale)
    if output_mask[1]:
        if pw is None:
            d = ew.neg(x)
        else:
            d = ew.sub(ew.mul(ew.rsub(pw, 1.0), ew.neg(un.softplus(ew.neg(x)))), x)
        gt = ew.mul(d, scale)
    return gx, gt


@op(node="BinaryCrossEntropyWithLogitsBackward0", inputs=("self", "target"), variants=_F,
    save=("self", "target", "weight", "pos_weight", "reduction", "n"),
    grads={("self", "target"): _bce_logits_grads})
def binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction):
    """BCE on logits, stable for any logit, in the target's float dtype (the caller checks
    the shapes and dtypes; ``weight`` and ``pos_weight`` broadcast to the input)."""
    dt = target._data.dtype
    x = A.astype(self._data, dt)
    t = target._data
    if pos_weight is None:
        el = EW.binary(EW.bce_logits, x, t, dt, x.shape, 1.0)
    else:
        el = EW.ternary(EW.bce_logits_pw, x, t, A.astype(pos_weight._data, dt), dt, x.shape)
    if weight is not None:
        el = EW.binary(EW.mul, el, A.astype(weight._data, dt), dt, x.shape)
    return _reduced(el, reduction), {"weight": weight, "pos_weight": pos_weight,
                                     "reduction": reduction, "n": el.size}


# ----------------------------------------------------------------------------------------
# the losses of ``numgrad.nn.functional`` below its argument parsing: PyTorch's checks in its
# order, then the ops above (or PyTorch's composites of ops)
# ----------------------------------------------------------------------------------------


def _weighted(el, weight, input, reduction):
    """mse/l1 with ``weight``: PyTorch's manual weighted reduction."""
    if weight._data.shape != input._data.shape:
        raise ValueError("Weights and input must have the same size.")
    el = ew.mul(el, weight)
    if reduction == "none":
        return el
    if reduction == "sum":
        return red.sum(el)
    return ew.div(red.sum(el), red.sum(weight))


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
    K.require_float(input, kernel)
    if weight is not None and weight._data.dtype != input._data.dtype:
        raise RuntimeError(f"expected scalar type {dtype_of(input)._legacy} but found "
                           f"{dtype_of(weight)._legacy}")


def _nll_nd(input, target, weight, ignore_index, reduction):
    """PyTorch's nll_loss_nd: (C,) and (N, C) inputs to nll_loss_forward, (N, C, H, W) ones to
    nll_loss2d_forward, other ranks viewed as (N, C, 1, -1) for it (the loss viewed back)."""
    nd = input._data.ndim
    if nd <= 2:
        return nll_loss_forward(input, target, weight, reduction, ignore_index)
    if nd == 4:
        return nll_loss2d_forward(input, target, weight, reduction, ignore_index)
    xs = input._data.shape
    n, c = xs[:2]
    x4 = sh.reshape(sh.contiguous(input), (n, c, 1, -1) if input._data.size else (n, c, 0, 0))
    t3 = A.reshape(target._data, (n, 1, -1) if target._data.size else (n, 0, 0))
    if x4._data.shape[2:] != t3.shape[1:]:  # C == 0 with targets
        raise RuntimeError(f"size mismatch (got input: {list(x4._data.shape)} , target: "
                           f"{list(t3.shape)}")
    out = nll_loss2d_forward(x4, t3, weight, reduction, ignore_index)
    return sh.reshape(out, (n,) + tuple(xs[2:])) if reduction == "none" else out


def _log_softmax(input, class_dim):
    K.require_float(input, "log_softmax_lastdim_kernel_impl" if class_dim == input._data.ndim - 1
                   else "log_softmax_kernel_impl")
    return red.log_softmax(input, class_dim)


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


def _channel_view(t, ndim):
    return sh.reshape(t, (1, -1) + (1,) * (ndim - 2))



def mse(input, target, reduction, shape, weight):
    """mse_loss over the broadcast ``shape`` (``MseLossBackward0``; weighted: composite)."""
    if weight is not None:
        return _weighted(ew.pow(ew.sub(input, target), 2), weight, input, reduction)
    dt = _dtype.result_type(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"mse_cpu\" not implemented for '{dt._legacy}'")
    return mse_loss(input, target, reduction, shape, dt)


def l1(input, target, reduction, weight):
    """|input - target|, reduced (a composite, as PyTorch's)."""
    el = ew.abs(ew.sub(input, target))
    if weight is not None:
        return _weighted(el, weight, input, reduction)
    return L.reduce(el, reduction)


def smooth_l1(input, target, reduction, beta):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (l1 at beta 0)."""
    if beta == 0.0:
        return L.reduce(ew.abs(ew.sub(input, target)), reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    dt = _dtype.result_type(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"smooth_l1_cpu\" not implemented for '{dt._legacy}'")
    d = ew.abs(ew.sub(input, target))
    loss = ew.where(ew.lt(d, beta), ew.div(ew.mul(ew.mul(d, d), 0.5), beta), ew.sub(d, 0.5 * beta))
    return L.reduce(loss, reduction)


def nll(input, target, weight, ignore_index, reduction):
    """nll_loss of parsed arguments: PyTorch's checks, then the op."""
    _nll_checks(input, target, weight)
    K.not_differentiable("nll_loss_forward", weight=weight)
    return _nll_nd(input, target, weight, ignore_index, reduction)


def cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing):
    """log_softmax + nll_loss for class indices, or the composite for class probabilities;
    ``label_smoothing`` mixes in the uniform distribution."""
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
            raise K.dim_error(1, 0)
        c = input._data.shape[class_dim]
        if weight is not None and (weight._data.ndim != 1 or weight._data.size != c):
            raise RuntimeError(
                f"cross_entropy: weight tensor should be defined either for all {c} classes or no "
                f"classes but got weight tensor of shape: {list(weight._data.shape)}")
        if label_smoothing > 1.0:
            raise smoothing_error
        logp = _log_softmax(input, class_dim)
        tgt = target
        if label_smoothing > 0:
            tgt = ew.add(ew.mul(target, 1 - label_smoothing), label_smoothing / c)
        prod = ew.mul(logp, tgt)
        if weight is not None:
            prod = ew.mul(prod, _channel_view(weight, nd) if nd > 1 else weight)
        loss = ew.neg(red.sum(prod, class_dim))
        if reduction == "mean":
            return ew.div(red.sum(loss), loss.numel() if nd > 1 else 1)
        return L.reduce(loss, reduction)
    if label_smoothing > 1.0:
        raise smoothing_error
    if nd == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    logp = _log_softmax(input, class_dim)
    _nll_checks(logp, target, weight)
    K.not_differentiable("nll_loss_forward", weight=weight)
    nll = _nll_nd(logp, target, weight, ignore_index, reduction)
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


def bce(input, target, weight, reduction):
    """binary_cross_entropy of parsed arguments: PyTorch's checks, then the op."""
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
    K.require_float(input, "binary_cross_entropy")
    x = input._data
    if x.size and NN.first_outside(A.contiguous(x).reshape(-1), 0.0, 1.0) >= 0:
        raise RuntimeError("all elements of input should be between 0 and 1")
    if w_shape is not None:
        K.inplace_shape(x.shape, w_shape)
    return binary_cross_entropy(input, target, weight, reduction)


def bce_with_logits(input, target, weight, pos_weight, reduction):
    """binary_cross_entropy_with_logits of parsed arguments: PyTorch's checks, then the op."""
    if input._data.shape != target._data.shape:
        raise ValueError(f"Target size ({Size(target._data.shape)}) must be the same as input "
                         f"size ({Size(input._data.shape)})")
    K.require_float(input, "log_sigmoid_cpu")
    x = input._data
    if pos_weight is not None:  # PyTorch: log_sigmoid(x).mul_((pos_weight - 1) * t + 1)
        K.inplace_shape(x.shape, broadcast_shapes(pos_weight._data.shape, target._data.shape))
    tdt = dtype_of(target)
    if tdt.np == np.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if not tdt.is_floating_point:
        raise RuntimeError(f"result type {dtype_of(input)._legacy} can't be cast to the desired "
                           f"output type {tdt._legacy}")
    if weight is not None:
        K.inplace_shape(x.shape, weight._data.shape)
    return binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                      reduction)


# ---- the checks of the losses and distances of ``numgrad.ops.losses`` ---------------------


def _legacy(t):
    return dtype_of(t)._legacy


def huber_dtypes(input, target):
    """PyTorch's huber_loss dtype rules: the loss has the (floating) input's dtype; the target
    is cast to it."""
    xd, td = dtype_of(input), dtype_of(target)
    if xd.is_floating_point:
        return target if td == xd else target.to(xd)
    if xd != td:
        rt = _dtype.result_type(input, target)
        raise RuntimeError(f"result type {rt._legacy} can't be cast to the desired output type "
                           f"{xd._legacy}")
    raise K.not_implemented("huber_cpu", input)


def pair_target_dims(input1, input2, target):
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


def ranking_dims(input1, input2, target):
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")


def kl_div(input, target, reduction, log_target, given=None):
    """KL(target || exp(input)) pointwise, reduced by the parsed ``reduction``; ``given``: the
    reduction as given when no legacy flag was (PyTorch warns of its 'mean'; 'batchmean' is
    the sum divided by the batch size)."""
    if given == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.", stacklevel=3)
    out = L.reduce(L.kl_div(input, target, log_target), reduction)
    return ew.div(out, input.shape[0]) if given == "batchmean" and input.dim() else out


def positive_margin(margin):
    """The triplet losses' Python check of ``margin``, before their arguments are used."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")


def triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p == n):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def _vector_or_matrix(input):
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    return nd


def _margin_dtypes(input, target, weight, kernel):
    K.require_float(input, kernel)
    if target.dtype != _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {_legacy(target)}")
    K.same_type(input, weight)


def soft_margin(input, target, reduction):
    """soft_margin_loss after PyTorch's checks; the target is cast to the input's dtype."""
    K.not_differentiable("soft_margin_loss", target=target)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type {_dtype.result_type(input, 1.0)._legacy} can't be cast "
                           f"to the desired output type {_legacy(input)}")
    if target.dtype != input.dtype:  # the loss has the input's dtype
        target = target.to(input.dtype)
    return L.soft_margin_loss(input, target, reduction)


def multi_margin_python(p, weight):
    """F.multi_margin_loss's own checks before its arguments are parsed."""
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")


def multi_margin(input, target, p, margin, weight, reduction):
    """multi_margin_loss of parsed arguments after PyTorch's checks
    (``MultiMarginLossBackward0``)."""
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
    K.not_differentiable("multi_margin_loss", weight=weight)
    return L.multi_margin_loss(input, target, int(p), float(margin), weight, reduction)


def multilabel_margin(input, target, reduction):
    """multilabel_margin_loss after PyTorch's checks (``MultilabelMarginLossBackward0``)."""
    nd = _vector_or_matrix(input)
    ts = tuple(target.shape)
    if (nd <= 1 and (target.dim() > 1 or target.numel() != (1 if nd == 0 else input.shape[0]))) \
            or (nd == 2 and ts != tuple(input.shape)):
        raise RuntimeError(f"inconsistent target size: {list(ts)} for input of size: "
                           f"{list(input.shape)}")
    _margin_dtypes(input, target, None, "multilabel_margin_loss_forward_out_frame")
    return L.multilabel_margin_loss(input, target, reduction)


def pdist(input, p):
    """pdist after PyTorch's checks."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    # PyTorch's one node over the composite (the pairs' differences and norms)
    return named_composite.record("PdistBackward0", lambda x: L.pdist(x, p), (input,), (input,),
                                  ("self",))


def cosine_similarity(x1, x2, dim, eps):
    """cosine_similarity of the broadcast inputs after PyTorch's checks of eps and dtypes."""
    if eps < 0:
        raise RuntimeError(f"eps must be non-negative, got: {eps:g}")
    dt = ew.add(x1.detach().flatten()[:0], x2.detach().flatten()[:0]).dtype
    if not dt.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{dt._legacy}")
    shape = tuple(np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    return L.cosine_similarity(x1.expand(shape), x2.expand(shape), dim, eps)


def gaussian_nll(input, target, var, full, eps, reduction):
    """gaussian_nll_loss after PyTorch's checks of ``var`` (a float, or a tensor of the
    input's shape or one broadcast dim less) and of the reduction."""
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


def same_weight_size(input, weight):
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")


def weighted_huber(input, target, weight, reduction, delta):
    """huber_loss with ``weight`` (``same_weight_size`` checked): PyTorch's manual weighted
    reduction."""
    loss = ew.mul(L.huber_loss(input, target, "none", delta), weight)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                         "'sum'.")
    return L.reduce(loss, reduction)
